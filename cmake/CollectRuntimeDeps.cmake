# Fills OUT with what a runtime-only build (cmake/RuntimeOnly.cmake) needs and
# a GPU machine may lack, about 4 MB to carry there:
#   include/flatbuffers/   the FlatBuffers headers (header-only use)
#   module_generated.h     this build's flatc output for runtime/schema/module.fbs.in
#   module.fbs             the schema it came from (a stale copy is refused)
#   cuda-include/          cuda.h, cublasLt.h and the CUDA headers they include
#
# cmake -DOUT=... -DSCHEMA=... -DSCHEMA_HEADER=... -DFLATBUFFERS_INCLUDE=...
#       -DCUDA_INCLUDE=... -DCXX=... -P CollectRuntimeDeps.cmake

foreach(var OUT SCHEMA SCHEMA_HEADER FLATBUFFERS_INCLUDE CUDA_INCLUDE CXX)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "${var} is not set")
  endif()
endforeach()

set(staging ${OUT}.tmp)
file(REMOVE_RECURSE ${staging})
file(MAKE_DIRECTORY ${staging}/include ${staging}/cuda-include)

set(flatbuffers_dir "")
foreach(dir ${FLATBUFFERS_INCLUDE})
  if(EXISTS ${dir}/flatbuffers/flatbuffers.h)
    set(flatbuffers_dir ${dir}/flatbuffers)
    break()
  endif()
endforeach()
if(NOT flatbuffers_dir)
  message(FATAL_ERROR "no flatbuffers/flatbuffers.h under ${FLATBUFFERS_INCLUDE}")
endif()
file(COPY ${flatbuffers_dir} DESTINATION ${staging}/include)
file(COPY ${SCHEMA_HEADER} ${SCHEMA} DESTINATION ${staging})

# The CUDA headers the runtime includes, with everything they include.
set(probe ${staging}/cuda-headers.cpp)
file(WRITE ${probe} "#include <cuda.h>\n#include <cublasLt.h>\n")
# nccl.h too where the toolkit has it: the NCCL collective (train/) takes its
# types from it on the GPU machine.
foreach(dir ${CUDA_INCLUDE})
  if(EXISTS ${dir}/nccl.h)
    file(APPEND ${probe} "#include <nccl.h>\n")
    break()
  endif()
endforeach()
set(include_flags "")
foreach(dir ${CUDA_INCLUDE})
  list(APPEND include_flags -I${dir})
endforeach()
execute_process(COMMAND ${CXX} -M ${include_flags} ${probe}
                RESULT_VARIABLE rc OUTPUT_VARIABLE dependencies ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "listing the CUDA headers failed:\n${err}")
endif()
file(REMOVE ${probe})
string(REPLACE "\\\n" " " dependencies "${dependencies}")
separate_arguments(dependencies UNIX_COMMAND "${dependencies}")
set(copied 0)
foreach(header ${dependencies})
  foreach(dir ${CUDA_INCLUDE})
    if(header MATCHES "^${dir}/(.*)$")
      get_filename_component(subdir ${CMAKE_MATCH_1} DIRECTORY)
      file(COPY ${header} DESTINATION ${staging}/cuda-include/${subdir})
      math(EXPR copied "${copied} + 1")
      break()
    endif()
  endforeach()
endforeach()
if(copied LESS 2)
  message(FATAL_ERROR "found no CUDA headers under ${CUDA_INCLUDE}")
endif()

file(REMOVE_RECURSE ${OUT})
file(RENAME ${staging} ${OUT})
