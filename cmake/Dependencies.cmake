# All dependencies are Debian packages (scripts/test installs them); CUDA and
# NCCL come with the machine image and are optional (SHARDSCOPE_CUDA=AUTO).
find_package(Threads REQUIRED)
find_package(spdlog REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(Gloo REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
# --launch processes: rank processes stream their events to the launcher (core/launch).
pkg_check_modules(ZMQ REQUIRED IMPORTED_TARGET libzmq)
# core/kineto: PyTorch profiler traces (JSON via simdjson, .json.gz via zlib).
find_package(simdjson REQUIRED)
find_package(ZLIB REQUIRED)
# libdeflate inflates a whole .json.gz about twice as fast as zlib's streaming
# inflate; optional (zlib alone still reads every file, and says what is wrong
# with a bad one).
pkg_check_modules(LIBDEFLATE IMPORTED_TARGET libdeflate)

if(SHARDSCOPE_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
if(SHARDSCOPE_BUILD_UI OR SHARDSCOPE_BUILD_TESTS)
  set(_qt_components Core Test)
  if(SHARDSCOPE_BUILD_UI)
    list(APPEND _qt_components Gui Widgets Svg PrintSupport)
  endif()
  find_package(Qt6 REQUIRED COMPONENTS ${_qt_components})
endif()
if(SHARDSCOPE_BUILD_UI)
  find_package(QCustomPlotQt6 REQUIRED)
endif()

# CUDA: AUTO enables it when nvcc and NCCL are found; ON makes them required.
set(SHARDSCOPE_HAVE_CUDA OFF)
if(NOT SHARDSCOPE_CUDA STREQUAL "OFF")
  if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu)
  # The GPU kernels' GEMMs need cuBLAS and cuBLASLt (imported by FindCUDAToolkit).
  if(CUDAToolkit_FOUND AND CUDAToolkit_NVCC_EXECUTABLE AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY
     AND TARGET CUDA::cublas AND TARGET CUDA::cublasLt)
    set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
    enable_language(CUDA)
    set(SHARDSCOPE_HAVE_CUDA ON)
    message(STATUS "ShardScope: CUDA ${CUDAToolkit_VERSION} and NCCL (${NCCL_LIBRARY}) found")
  elseif(SHARDSCOPE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SHARDSCOPE_CUDA=ON but nvcc, cuBLAS(Lt) or NCCL was not found (CUDAToolkit_ROOT, NCCL_INCLUDE_DIR, NCCL_LIBRARY)")
  else()
    message(STATUS "ShardScope: CUDA, cuBLAS or NCCL not found, building without the CUDA backend")
  endif()
endif()
