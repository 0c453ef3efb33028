#!/bin/sh
# A C++ or CUDA compiler that always fails, for LMC_CXX and LMC_NVCC
# (test/Codegen/check-plan-contract.test): whatever runs it fails, saying so.
echo "failing-compiler.sh ran: $*" >&2
exit 7
