# The runtime-only configuration (-DMIXPREC_RUNTIME_ONLY=ON): libmixprec_runtime,
# the runtime's tests that need no compiler, and a runner (examples/embed,
# built as tests/unit/runtime/embed_example_intree), for machines without
# LLVM/MLIR, ONNX or protobuf, such as the lent GPU machine.
#
# Needs a C/C++ toolchain, CMake and the CUDA headers cuda.h and cublasLt.h
# (from the CUDA toolkit, PyTorch's nvidia-* wheels, or the deps folder).
# The rest is optional:
#  - FlatBuffers 2.0.8: else the deps folder MIXPREC_RUNTIME_DEPS (default
#    build/runtime-deps), which a full build makes (target
#    mixprec_runtime_deps, built by default): the FlatBuffers headers, the
#    generated module_generated.h and the module.fbs it came from (a copy
#    made from another schema is refused), and the CUDA headers;
#  - OpenBLAS: else the CPU backend multiplies with PortableSgemm;
#  - GoogleTest: else the gtest suites are left out (MIXPREC_BUILD_TESTS,
#    found and set by the top-level CMakeLists.txt).

set(MIXPREC_RUNTIME_DEPS "${PROJECT_SOURCE_DIR}/build/runtime-deps" CACHE PATH
    "Header-only dependencies made by a full build's mixprec_runtime_deps target")
include_directories(${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
enable_testing()
find_package(Threads REQUIRED)

# ---- CUDA headers (never CUDA libraries: the runtime dlopens them) -----------
find_package(CUDAToolkit QUIET)
set(mixprec_cuda_hints ${CUDAToolkit_INCLUDE_DIRS})
find_package(Python3 QUIET COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  # PyTorch's CUDA wheels keep cuBLASLt's headers under site-packages/nvidia.
  execute_process(COMMAND ${Python3_EXECUTABLE} -c
                    "import nvidia; print(';'.join(nvidia.__path__))"
                  OUTPUT_VARIABLE nvidia_paths OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  foreach(path ${nvidia_paths})
    file(GLOB wheel_includes ${path}/*/include)
    list(APPEND mixprec_cuda_hints ${wheel_includes})
  endforeach()
endif()
list(APPEND mixprec_cuda_hints ${MIXPREC_RUNTIME_DEPS}/cuda-include)
find_path(MIXPREC_CUDA_H_DIR cuda.h HINTS ${mixprec_cuda_hints} NO_DEFAULT_PATH)
find_path(MIXPREC_CUBLASLT_H_DIR cublasLt.h HINTS ${mixprec_cuda_hints} NO_DEFAULT_PATH)
if(NOT MIXPREC_CUDA_H_DIR OR NOT MIXPREC_CUBLASLT_H_DIR)
  message(FATAL_ERROR "runtime-only build: cuda.h or cublasLt.h not found (looked in: "
                      "${mixprec_cuda_hints}); install the CUDA toolkit or carry "
                      "${MIXPREC_RUNTIME_DEPS} from a full build")
endif()
set(MIXPREC_CUDA_INCLUDE_DIRS ${MIXPREC_CUDA_H_DIR} ${MIXPREC_CUBLASLT_H_DIR})
list(REMOVE_DUPLICATES MIXPREC_CUDA_INCLUDE_DIRS)
message(STATUS "runtime-only: CUDA headers from ${MIXPREC_CUDA_INCLUDE_DIRS}")

# ---- FlatBuffers: the package, or the deps folder ----------------------------
find_package(FlatBuffers CONFIG QUIET)
if(NOT TARGET flatbuffers::flatc)
  set(deps ${MIXPREC_RUNTIME_DEPS})
  if(NOT EXISTS ${deps}/module.fbs OR NOT EXISTS ${deps}/module_generated.h)
    message(FATAL_ERROR "runtime-only build: no FlatBuffers package and no ${deps}: build "
                        "the target mixprec_runtime_deps of a full build and carry its "
                        "build/runtime-deps folder here (or set MIXPREC_RUNTIME_DEPS)")
  endif()
  include(${PROJECT_SOURCE_DIR}/cmake/ModuleSchema.cmake)
  mixprec_generate_module_schema()
  file(SHA256 ${deps}/module.fbs carried_schema)
  file(SHA256 ${MIXPREC_MODULE_SCHEMA} schema)
  if(NOT carried_schema STREQUAL schema)
    message(FATAL_ERROR "runtime-only build: ${deps} was made from another "
                        "runtime/schema/module.fbs.in or ScalarFns.def: rebuild mixprec_runtime_deps in a full "
                        "build of this checkout and carry it again")
  endif()
  add_library(flatbuffers::flatbuffers INTERFACE IMPORTED)
  set_target_properties(flatbuffers::flatbuffers PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES ${deps}/include)
  set(MIXPREC_PREGENERATED_SCHEMA_HEADER ${deps}/module_generated.h)
  message(STATUS "runtime-only: FlatBuffers headers and the module schema from ${deps}")
endif()

# ---- Optional: OpenBLAS ------------------------------------------------------
set(BLA_VENDOR OpenBLAS)
find_package(BLAS QUIET)
find_path(OPENBLAS_INCLUDE_DIR cblas.h PATHS /usr/include/x86_64-linux-gnu/openblas-pthread
          /usr/include/openblas /usr/include)
if(BLAS_FOUND AND OPENBLAS_INCLUDE_DIR)
  set(MIXPREC_USE_BLAS ON)
else()
  set(MIXPREC_USE_BLAS OFF)
  message(STATUS "runtime-only: no OpenBLAS; the CPU backend's GEMMs use PortableSgemm")
endif()
find_package(dnnl CONFIG QUIET)
if(dnnl_FOUND)
  set(MIXPREC_USE_DNNL ON)
else()
  set(MIXPREC_USE_DNNL OFF)
  message(STATUS "runtime-only: no oneDNN (libdnnl-dev): every GEMM step takes the sgemm path")
endif()
if(NOT MIXPREC_BUILD_TESTS)
  message(STATUS "runtime-only: no GoogleTest; the gtest suites are left out")
endif()

add_subdirectory(common)
add_subdirectory(runtime)
add_subdirectory(train)
add_subdirectory(tests/unit/runtime)
# The collectives' tests (collective_nccl_gpu needs no GoogleTest).
add_subdirectory(tests/unit/train)
add_subdirectory(tools/mixprec-train-run)
