# Helpers of the `cmake -P` test scripts (include() them by path).

# Fails unless every variable named is set and not empty.
function(mixprec_require_vars)
  foreach(var ${ARGN})
    if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
      message(FATAL_ERROR "${var} is not set")
    endif()
  endforeach()
endfunction()

# Runs the command; fails with its output unless it exits 0. Sets `output`
# to its stdout and stderr.
function(run_checked)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(output "${out}${err}" PARENT_SCOPE)
endfunction()
