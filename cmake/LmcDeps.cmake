# Third-party dependencies shared by the compiler and the runtime (installed by scripts/setup.sh).
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(Protobuf REQUIRED)
# Plan signatures and kernel digests (contract/plan_trust.h): OpenSSL's libcrypto.
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
find_package(CLI11 CONFIG QUIET)
if(NOT CLI11_FOUND)
  find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  target_include_directories(CLI11::CLI11 INTERFACE ${CLI11_INCLUDE_DIR})
endif()
find_package(GTest REQUIRED)
# Distributed training on the CPU (runtime/comm): Open MPI from Debian (openmpi-bin, libopenmpi-dev).
# MPI's C API only (no libmpi_cxx).
find_package(MPI REQUIRED COMPONENTS C)
find_program(LMC_MPIRUN NAMES mpirun PATHS ${MPI_HOME}/bin)
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
find_path(CBLAS_INCLUDE_DIR cblas.h PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas REQUIRED)
# oneDNN (Debian's libdnnl-dev, built on the same libgomp as LMC): its JIT sgemm runs the f32
# GEMMs, 5-35 % faster than OpenBLAS's on the GPT shapes (docs/runtime.md). OpenBLAS keeps f64.
find_path(DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.h REQUIRED)
find_library(DNNL_LIBRARY dnnl REQUIRED)
add_library(DNNL::dnnl UNKNOWN IMPORTED)
set_target_properties(DNNL::dnnl PROPERTIES IMPORTED_LOCATION ${DNNL_LIBRARY} INTERFACE_INCLUDE_DIRECTORIES ${DNNL_INCLUDE_DIR})

# The CUDA backend of lmrt (runtime/cuda/) is built when the CUDA toolkit is
# found (nvcc and cuBLASLt); without it lmrt still builds, and `lmrt run --device
# cuda` says that this lmrt has no CUDA backend. No GPU is needed to build it.
option(LMC_ENABLE_CUDA "Build lmrt's CUDA backend when the CUDA toolkit is found" ON)
set(LMC_HAVE_CUDA OFF)
if(LMC_ENABLE_CUDA)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND TARGET CUDA::cublasLt AND TARGET CUDA::cudart_static)
    if(NOT CMAKE_CUDA_COMPILER)
      set(CMAKE_CUDA_COMPILER "${CUDAToolkit_NVCC_EXECUTABLE}")
    endif()
    # SASS for A100 (sm_80) and H100/H200 (sm_90), PTX of both for newer GPUs.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    if(CCACHE_PROGRAM)
      set(CMAKE_CUDA_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
    endif()
    set(LMC_HAVE_CUDA ON)
    # NCCL, the collectives of the CUDA backend (runtime/comm/nccl_communicator.h): from the toolkit.
    # Only its header: the plugin opens libnccl.so.2 when a run of several ranks first
    # needs it, so a one-GPU run (and the GPU bundle) does without the 200 MB library.
    find_path(LMC_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    if(LMC_NCCL_INCLUDE_DIR)
      message(STATUS "lmrt NCCL collectives: ${LMC_NCCL_INCLUDE_DIR}/nccl.h (libnccl.so.2 opened at run time)")
    else()
      message(STATUS "lmrt NCCL collectives: off (no nccl.h beside the CUDA toolkit)")
    endif()
    message(STATUS "lmrt CUDA backend: on (CUDA ${CUDAToolkit_VERSION}, ${CMAKE_CUDA_COMPILER})")
  else()
    message(STATUS "lmrt CUDA backend: off (no CUDA toolkit with cuBLASLt found)")
  endif()
else()
  message(STATUS "lmrt CUDA backend: off (LMC_ENABLE_CUDA=OFF)")
endif()
