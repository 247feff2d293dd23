# The module schema flatc reads: runtime/schema/module.fbs.in run through the
# C preprocessor into the build tree, so that sc::OpCode takes the scalar
# functions' opcodes (MP_OPCODE) from runtime/format/ScalarFns.def. Editing
# either file reruns the configure step. Sets MIXPREC_MODULE_SCHEMA to the
# generated file; the full and the runtime-only build both call it (the
# runtime-only build compares it with the schema a carried header came from).
function(mixprec_generate_module_schema)
  set(source ${PROJECT_SOURCE_DIR}/runtime/schema/module.fbs.in)
  set(output ${PROJECT_BINARY_DIR}/runtime/schema/module.fbs)
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
    ${source} ${PROJECT_SOURCE_DIR}/runtime/format/ScalarFns.def)
  file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/runtime/schema)
  execute_process(
    COMMAND ${CMAKE_CXX_COMPILER} -E -P -x c -I${PROJECT_SOURCE_DIR} ${source} -o ${output}.tmp
    RESULT_VARIABLE preprocess_result ERROR_VARIABLE preprocess_error)
  if(NOT preprocess_result EQUAL 0)
    message(FATAL_ERROR "preprocessing runtime/schema/module.fbs.in failed:\n${preprocess_error}")
  endif()
  # Rewritten only when it changed, so that flatc and what includes its
  # header do not rerun on every configure.
  configure_file(${output}.tmp ${output} COPYONLY)
  file(REMOVE ${output}.tmp)
  set(MIXPREC_MODULE_SCHEMA ${output} PARENT_SCOPE)
endfunction()
