# ctest runtime_only_build: the runtime-only configuration (RuntimeOnly.cmake)
# configures, builds and passes its tests as on a GPU machine with no LLVM,
# MLIR, ONNX, protobuf, FlatBuffers, OpenBLAS, oneDNN, GoogleTest or CUDA toolkit:
# those packages are disabled, FlatBuffers and the CUDA headers come from
# this build's runtime-deps folder, and no compiled file may have read a
# header of the disabled packages (ninja's dependency log says which it read),
# nor may libmixprec_runtime.so need their libraries.
#
# cmake -DSOURCE_DIR=... -DWORK_DIR=... -DDEPS=... -DC_COMPILER=...
#       -DCXX_COMPILER=... -DNINJA=... -DREADELF=... -P RuntimeOnlyBuildTest.cmake

include(${CMAKE_CURRENT_LIST_DIR}/TestScriptHelpers.cmake)
mixprec_require_vars(SOURCE_DIR WORK_DIR DEPS C_COMPILER CXX_COMPILER NINJA READELF)

set(disabled "")
foreach(package MLIR LLVM ONNX Protobuf FlatBuffers BLAS dnnl GTest CUDAToolkit)
  list(APPEND disabled -DCMAKE_DISABLE_FIND_PACKAGE_${package}=ON)
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
run_checked(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR} -G Ninja
            -DCMAKE_MAKE_PROGRAM=${NINJA} -DCMAKE_BUILD_TYPE=Release
            -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
            -DMIXPREC_RUNTIME_ONLY=ON -DMIXPREC_RUNTIME_DEPS=${DEPS} ${disabled})
foreach(expected "FlatBuffers headers and the module schema from ${DEPS}"
                 "CUDA headers from ${DEPS}/cuda-include"
                 "no OpenBLAS; the CPU backend's GEMMs use PortableSgemm"
                 "runtime-only: no oneDNN (libdnnl-dev): every GEMM step takes the sgemm path")
  string(FIND "${output}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "configure output lacks '${expected}':\n${output}")
  endif()
endforeach()
run_checked(${CMAKE_COMMAND} --build ${WORK_DIR})
run_checked(${CMAKE_COMMAND} -E chdir ${WORK_DIR} ${CMAKE_CTEST_COMMAND} --output-on-failure)
message(STATUS "runtime-only ctest:\n${output}")
if(NOT output MATCHES "runtime_no_cuda_libraries[ .]*Passed")
  message(FATAL_ERROR "runtime_no_cuda_libraries did not pass in the runtime-only build")
endif()

# Every header any compiled file read.
run_checked(${NINJA} -C ${WORK_DIR} -t deps)
string(REGEX MATCHALL "\n +/[^\n]+" headers "${output}")
list(LENGTH headers count)
if(count LESS 50)
  message(FATAL_ERROR "ninja -t deps listed only ${count} headers:\n${output}")
endif()
foreach(header ${headers})
  string(STRIP "${header}" header)
  # The compiler's own headers (clang's stddef.h lives under
  # /usr/lib/llvm-19/lib/clang/) are not the LLVM libraries.
  if(header MATCHES "^/usr/lib/llvm-[0-9]+/lib/clang/[0-9]+/include/")
    continue()
  endif()
  if(header MATCHES "^/usr/(lib|include)/llvm|^/usr/include/(mlir|onnx|google|gtest|flatbuffers|oneapi)/|^/usr/include/dnnl|openblas|^/usr/local/cuda")
    message(FATAL_ERROR "the runtime-only build read ${header}")
  endif()
endforeach()
message(STATUS "${count} header reads, none from LLVM, MLIR, ONNX, protobuf, GoogleTest, "
               "the system FlatBuffers, OpenBLAS, oneDNN or the CUDA toolkit")

mixprec_needed_libraries(${READELF} ${WORK_DIR}/runtime/libmixprec_runtime.so needed)
if(needed MATCHES "LLVM|MLIR|openblas|gfortran|flatbuffers|dnnl")
  message(FATAL_ERROR "runtime-only libmixprec_runtime.so NEEDED: ${needed}")
endif()
