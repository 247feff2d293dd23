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

# Sets `var` to the NEEDED entries (readelf -d) of the ELF file `file`: the
# libraries the loader will look for. Fails when readelf fails or lists none
# (every binary here needs libc).
function(mixprec_needed_libraries readelf file var)
  execute_process(COMMAND ${readelf} -d ${file} RESULT_VARIABLE rc OUTPUT_VARIABLE dynamic
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "readelf -d ${file} failed (${rc}): ${err}")
  endif()
  string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*" needed "${dynamic}")
  if(NOT needed MATCHES "libc\\.so")
    message(FATAL_ERROR "no NEEDED entries read from ${file}:\n${dynamic}")
  endif()
  set(${var} "${needed}" PARENT_SCOPE)
endfunction()
