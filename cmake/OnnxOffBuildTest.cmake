# ctest onnx_off_build: the compiler, the tools and the runtime configure,
# build and pass lit without the ONNX importer (MIXPREC_ENABLE_ONNX=OFF, with
# protobuf and ONNX not even looked for): lit's .onnx tests are unsupported,
# the rest pass; no mixprec_import target exists; the CLI does not need
# libprotobuf; and `mixprec compile` on an .onnx model fails naming the file
# and the option, while an .mlir model compiles.
#
# The folder sits beside the main build folder, so with CCACHE_BASEDIR at the
# checkout every object but LoadModel.cpp's is a ccache hit (same command
# line relative to the build folder): the test costs links, not a rebuild.
#
# cmake -DSOURCE_DIR=... -DWORK_DIR=... -DMLIR_DIR=... -DC_COMPILER=...
#       -DCXX_COMPILER=... -DNINJA=... -DREADELF=... -DPYTHON=... -DLIT=...
#       -P OnnxOffBuildTest.cmake

include(${CMAKE_CURRENT_LIST_DIR}/TestScriptHelpers.cmake)
mixprec_require_vars(SOURCE_DIR WORK_DIR MLIR_DIR C_COMPILER CXX_COMPILER NINJA READELF PYTHON LIT)

set(ENV{CCACHE_BASEDIR} ${SOURCE_DIR})
file(REMOVE_RECURSE ${WORK_DIR})
run_checked(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR} -G Ninja
            -DCMAKE_MAKE_PROGRAM=${NINJA} -DCMAKE_BUILD_TYPE=Release
            -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
            -DMLIR_DIR=${MLIR_DIR} -DPython3_EXECUTABLE=${PYTHON}
            -DCMAKE_DISABLE_FIND_PACKAGE_ONNX=ON -DCMAKE_DISABLE_FIND_PACKAGE_Protobuf=ON
            -DMIXPREC_BUILD_TESTS=OFF -DMIXPREC_BUILD_PYTHON=OFF)
foreach(expected "ONNX import off (MIXPREC_ENABLE_ONNX=OFF)"
                 "the unit (but runtime), e2e and Python test suites are not configured")
  string(FIND "${output}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "configure output lacks '${expected}':\n${output}")
  endif()
endforeach()

run_checked(${NINJA} -C ${WORK_DIR} -t targets all)
if(output MATCHES "mixprec_import")
  message(FATAL_ERROR "the ONNX-off build still has the importer's targets")
endif()
run_checked(${CMAKE_COMMAND} --build ${WORK_DIR})

mixprec_needed_libraries(${READELF} ${WORK_DIR}/bin/mixprec needed)
if(needed MATCHES "protobuf|onnx")
  message(FATAL_ERROR "bin/mixprec needs protobuf or ONNX:\n${needed}")
endif()

# lit: the .onnx tests are unsupported, every other passes.
run_checked(${PYTHON} ${LIT} -v ${WORK_DIR}/tests/lit)
if(NOT output MATCHES "Unsupported *: *[1-9]")
  message(FATAL_ERROR "lit reported no unsupported (REQUIRES: onnx) tests:\n${output}")
endif()
if(NOT output MATCHES "Passed *: *[1-9][0-9]")
  message(FATAL_ERROR "lit passed fewer than 10 tests:\n${output}")
endif()
string(REGEX MATCH "Unsupported *: *[0-9]+" unsupported "${output}")
string(REGEX MATCH "Passed *: *[0-9]+" passed "${output}")
message(STATUS "lit without ONNX: ${passed}, ${unsupported}")

# The CLI: .onnx refused by name, .mlir compiled.
execute_process(COMMAND ${WORK_DIR}/bin/mixprec compile ${SOURCE_DIR}/examples/mlp.onnx
                        -o ${WORK_DIR}/mlp.mpk
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "examples/mlp.onnx: this mixprec was built without the ONNX importer \\(MIXPREC_ENABLE_ONNX=OFF\\)")
  message(FATAL_ERROR "mixprec compile of an .onnx model: exit ${rc}, expected a refusal:\n${out}${err}")
endif()
if(EXISTS ${WORK_DIR}/mlp.mpk)
  message(FATAL_ERROR "the refused compile wrote ${WORK_DIR}/mlp.mpk")
endif()
run_checked(${WORK_DIR}/bin/mixprec compile ${SOURCE_DIR}/tests/lit/cli/Inputs/fp8-mlp.mlir
            -o ${WORK_DIR}/fp8-mlp.mpk)
if(NOT EXISTS ${WORK_DIR}/fp8-mlp.mpk)
  message(FATAL_ERROR "mixprec compile of an .mlir model wrote no module")
endif()
message(STATUS "ONNX-off build: .onnx refused by name, .mlir compiled")
