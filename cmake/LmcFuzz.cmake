# LMC_FUZZ=ON: the fuzz build (docs/fuzzing.md; scripts/fuzz.sh makes it in
# build-fuzz). Included before any target, so that every object of the build is
# instrumented for libFuzzer's coverage and checked by ASan and UBSan: the fuzz
# targets in test/Fuzz link the production libraries themselves, not copies.
# Only the fuzz targets (and what they link) are built there: `lmc_fuzzers`.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "LMC_FUZZ needs clang (libFuzzer); found ${CMAKE_CXX_COMPILER_ID}. "
                      "scripts/fuzz.sh configures Debian's clang-19 (scripts/setup.sh --fuzz installs it).")
endif()

# nvcc takes none of these flags, and no fuzz target needs the CUDA backend.
set(LMC_ENABLE_CUDA OFF)

# fuzzer-no-link: coverage instrumentation without libFuzzer's main, which only
# the fuzz targets link (-fsanitize=fuzzer, test/Fuzz/CMakeLists.txt).
# -fno-sanitize-recover: the first UBSan report stops the run, as a crash does.
# -Wno-pass-failed: the instrumentation keeps clang from vectorising the kernels'
# `#pragma omp simd` loops, which it would otherwise report for every one.
set(LMC_FUZZ_COMPILE_FLAGS -fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=all
    -fno-omit-frame-pointer -Wno-pass-failed)
add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${LMC_FUZZ_COMPILE_FLAGS}>")
add_link_options("$<$<LINK_LANGUAGE:C,CXX>:-fsanitize=address,undefined>")

# lm-tblgen runs during the build (it writes the op and elementwise tables) and
# is LLVM's code: build it plain, so that no sanitizer report of LLVM's fails
# the build. Called once the target exists (test/Fuzz/CMakeLists.txt).
function(lmc_fuzz_plain_build_tool target)
  target_compile_options(${target} PRIVATE -fno-sanitize=all)
  target_link_options(${target} PRIVATE -fno-sanitize=all)
endfunction()
