# Installs the runtime component of the build into a fresh prefix, builds
# examples/embed against it with find_package(mixprec), and runs it on a
# module written by make_test_module. Its output must equal the in-tree
# build's (same library code, so bit-identical checksums), and a broken side
# file must give a clear error and a non-zero exit.
#
# cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DMAKE_MODULE=...
#       -DEMBED_INTREE=... -DC_COMPILER=... -DGENERATOR=... [-DEXE_LINKER_FLAGS=...]
#       -P EmbedInstallTest.cmake

include(${CMAKE_CURRENT_LIST_DIR}/../../../cmake/TestScriptHelpers.cmake)
mixprec_require_vars(BUILD_DIR SOURCE_DIR WORK_DIR MAKE_MODULE EMBED_INTREE MIXPREC C_COMPILER
                     GENERATOR)

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

run_checked(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix}
            --component mixprec_runtime)
foreach(installed include/mixprec/runtime.h include/mixprec/runtime.hpp)
  if(NOT EXISTS ${prefix}/${installed})
    message(FATAL_ERROR "not installed: ${installed}")
  endif()
endforeach()
file(GLOB config ${prefix}/lib*/cmake/mixprec/mixprecConfig.cmake)
if(NOT config)
  message(FATAL_ERROR "no mixprecConfig.cmake under ${prefix}")
endif()

# The runtime must embed without LLVM/MLIR.
find_program(LDD ldd)
if(LDD)
  file(GLOB libraries ${prefix}/lib*/libmixprec_runtime.so)
  execute_process(COMMAND ${LDD} ${libraries} OUTPUT_VARIABLE deps)
  if(deps MATCHES "LLVM|MLIR")
    message(FATAL_ERROR "libmixprec_runtime.so depends on LLVM/MLIR:\n${deps}")
  endif()
endif()

run_checked(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/embed -B ${WORK_DIR}/build
            -G "${GENERATOR}" -DCMAKE_C_COMPILER=${C_COMPILER}
            "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}"
            -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run_checked(${CMAKE_COMMAND} --build ${WORK_DIR}/build)

run_checked(${MAKE_MODULE} ${WORK_DIR}/mlp.mpk --external)
set(args ${WORK_DIR}/mlp.mpk --seed 7 --backend cpu)
execute_process(COMMAND ${WORK_DIR}/build/embed ${args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE installed_out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "installed embed failed (${rc}):\n${installed_out}\n${err}")
endif()
execute_process(COMMAND ${EMBED_INTREE} ${args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE intree_out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "in-tree embed failed (${rc}):\n${intree_out}\n${err}")
endif()
message(STATUS "installed embed:\n${installed_out}")
if(NOT installed_out STREQUAL intree_out)
  message(FATAL_ERROR "installed and in-tree outputs differ:\n${installed_out}\n---\n${intree_out}")
endif()
foreach(expected "input 0: x f32 \\[5,24\\]" "output 2: hidden bf16 \\[5,32\\]"
                 "output 0 probs: sum (4\\.9999|5)" "checksum 0x[0-9a-f]+")
  if(NOT installed_out MATCHES "${expected}")
    message(FATAL_ERROR "output lacks '${expected}':\n${installed_out}")
  endif()
endforeach()

# A module the compiler made: the example MLP at bf16, run by the installed
# embed program.
run_checked(${MIXPREC} compile ${SOURCE_DIR}/examples/mlp.onnx --precision bf16
            -o ${WORK_DIR}/example.mpk)
execute_process(COMMAND ${WORK_DIR}/build/embed ${WORK_DIR}/example.mpk --seed 3 --backend cpu
                RESULT_VARIABLE rc OUTPUT_VARIABLE compiled_out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "installed embed on a compiled module failed (${rc}):\n${compiled_out}\n${err}")
endif()
foreach(expected "input 0: x f32 \\[8,64\\]" "output 0: probs f32 \\[8,10\\]"
                 "output 0 probs: sum (7\\.999|8)" "checksum 0x[0-9a-f]+")
  if(NOT compiled_out MATCHES "${expected}")
    message(FATAL_ERROR "compiled-module output lacks '${expected}':\n${compiled_out}")
  endif()
endforeach()
message(STATUS "installed embed on the compiled example:\n${compiled_out}")

# A changed side file: a clear error naming it, exit status 1.
file(SIZE ${WORK_DIR}/weights.bin size)
file(APPEND ${WORK_DIR}/weights.bin "extra")
execute_process(COMMAND ${WORK_DIR}/build/embed ${args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES
   "SIDE_FILE_ERROR: .*weights.bin' is [0-9]+ bytes, the module expects ${size}")
  message(FATAL_ERROR "altered side file: exit ${rc}, stderr:\n${err}")
endif()
message(STATUS "altered side file: ${err}")

# No module at all: an I/O error, exit status 1.
execute_process(COMMAND ${WORK_DIR}/build/embed ${WORK_DIR}/missing.mpk
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "IO_ERROR: .*missing.mpk' cannot be opened")
  message(FATAL_ERROR "missing module: exit ${rc}, stderr:\n${err}")
endif()
