# ctest driver for an out-of-tree example (cmake -P): installs LMC from its
# build tree into PREFIX, configures and builds the example against it with
# find_package(LMC) (nothing else is passed but CMAKE_PREFIX_PATH), and runs
# the example's lit test through its CHECK_TARGET.
#   -DLMC_BUILD_DIR= -DPREFIX= -DEXAMPLE_SOURCE_DIR= -DEXAMPLE_BINARY_DIR= -DCHECK_TARGET=
foreach(var LMC_BUILD_DIR PREFIX EXAMPLE_SOURCE_DIR EXAMPLE_BINARY_DIR CHECK_TARGET)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "TestExample.cmake: -D${var}= is required")
  endif()
endforeach()

function(run_step what)
  message(STATUS "${what}: ${ARGN}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc})")
  endif()
endfunction()

file(REMOVE_RECURSE "${PREFIX}")
run_step("install LMC" ${CMAKE_COMMAND} --install "${LMC_BUILD_DIR}" --prefix "${PREFIX}")
set(launcher "")
find_program(CCACHE ccache)
if(CCACHE)
  set(launcher "-DCMAKE_CXX_COMPILER_LAUNCHER=${CCACHE}")
endif()
run_step("configure the example" ${CMAKE_COMMAND} -G Ninja -S "${EXAMPLE_SOURCE_DIR}" -B "${EXAMPLE_BINARY_DIR}"
  -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${PREFIX}" ${launcher})
run_step("build the example" ${CMAKE_COMMAND} --build "${EXAMPLE_BINARY_DIR}")
run_step("test the example" ${CMAKE_COMMAND} --build "${EXAMPLE_BINARY_DIR}" --target "${CHECK_TARGET}")
