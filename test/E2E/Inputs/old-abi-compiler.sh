#!/bin/bash
# A C++ compiler for LMC_CXX that compiles lmc's generated source (its last argument)
# without the column reductions' NAME_combine entries, as an lmc from before the
# row-chunked column sums wrote it (test/E2E/kernel-library-errors.test).
src="${@: -1}"
sed 's/_combine(/_gone(/' "$src" > "$src.old.cpp"
exec c++ "${@:1:$#-1}" "$src.old.cpp"
