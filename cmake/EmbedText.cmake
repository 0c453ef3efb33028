# Writes the text of IN as a C++ raw string literal into OUT, so a header can be
# embedded verbatim in a binary (lmc embeds the kernels' scalar-math prelude).
# Usage: cmake -DIN=<file> -DOUT=<file> -P EmbedText.cmake
file(READ "${IN}" text)
file(WRITE "${OUT}.tmp" "R\"LMCEMBED(${text})LMCEMBED\"\n")
file(RENAME "${OUT}.tmp" "${OUT}")
