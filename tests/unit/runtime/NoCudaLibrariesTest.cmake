# libmixprec_runtime.so loads and runs on the CPU where no CUDA library can be
# loaded at all:
#  1. it names no CUDA library as NEEDED (readelf), nor does anything it
#     loads (ldd), so the dynamic loader never looks for one;
#  2. with the driver and cuBLASLt hidden (their MIXPREC_*_LIBRARY hooks name
#     libraries that do not exist, so every dlopen of them fails), a module
#     runs on the CPU under --backend auto, which says why, with the same
#     results as --backend cpu; --backend cuda fails with NO_DEVICE;
#  3. with a fake driver that finds a device, auto still says why it chose
#     the CPU (the module has no CUDA code), and a driver that lacks an
#     entry point names it.
#
# cmake -DRUNTIME=... -DREADELF=... -DMAKE_MODULE=... -DRUNNER=...
#       -DFAKE_DRIVER=... -DWORK_DIR=... -P NoCudaLibrariesTest.cmake

include(${CMAKE_CURRENT_LIST_DIR}/../../../cmake/TestScriptHelpers.cmake)
mixprec_require_vars(RUNTIME READELF MAKE_MODULE RUNNER FAKE_DRIVER WORK_DIR)

set(cuda_libraries "libcuda|libcudart|libcublas|libcublasLt|libnvrtc|libnvidia")

# 1. What the loader would look for.
mixprec_needed_libraries(${READELF} ${RUNTIME} needed)
message(STATUS "libmixprec_runtime.so NEEDED: ${needed}")
if(needed MATCHES "${cuda_libraries}")
  message(FATAL_ERROR "libmixprec_runtime.so needs a CUDA library: ${needed}")
endif()
find_program(LDD ldd)
if(LDD)
  execute_process(COMMAND ${LDD} ${RUNTIME} OUTPUT_VARIABLE closure)
  if(closure MATCHES "${cuda_libraries}")
    message(FATAL_ERROR "libmixprec_runtime.so loads a CUDA library:\n${closure}")
  endif()
endif()

# 2. A run with every CUDA library hidden.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
execute_process(COMMAND ${MAKE_MODULE} ${WORK_DIR}/mlp.mpk RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "make_test_module failed (${rc})")
endif()

# Runs the runner with `env` (NAME=VALUE...) and `args`; sets rc, out, err.
function(run_runner env args)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${env} ${RUNNER} ${WORK_DIR}/mlp.mpk ${args}
                  RESULT_VARIABLE r OUTPUT_VARIABLE o ERROR_VARIABLE e)
  set(rc ${r} PARENT_SCOPE)
  set(out "${o}" PARENT_SCOPE)
  set(err "${e}" PARENT_SCOPE)
endfunction()

# Fails unless `text` matches every regular expression after it.
function(expect what text)
  foreach(pattern ${ARGN})
    if(NOT text MATCHES "${pattern}")
      message(FATAL_ERROR "${what}: lacks '${pattern}':\n${text}")
    endif()
  endforeach()
endfunction()

set(hidden MIXPREC_CUDA_DRIVER_LIBRARY=libmixprec-hidden-cuda.so.1
           MIXPREC_CUBLASLT_LIBRARY=libmixprec-hidden-cublaslt.so)
run_runner("${hidden}" "--seed;5;--backend;auto")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "auto with CUDA hidden failed (${rc}):\n${out}\n${err}")
endif()
expect("auto with CUDA hidden" "${out}" "backend cpu\n"
  "auto chose the CPU backend: CUDA backend: no GPU: cannot load 'libmixprec-hidden-cuda\\.so\\.1' \\(no NVIDIA driver installed\\): "
  "checksum 0x[0-9a-f]+")
set(auto_out "${out}")
run_runner("${hidden}" "--seed;5;--backend;cpu")
string(REGEX MATCH "checksum 0x[0-9a-f]+" auto_sum "${auto_out}")
string(REGEX MATCH "checksum 0x[0-9a-f]+" cpu_sum "${out}")
if(NOT rc EQUAL 0 OR NOT auto_sum STREQUAL cpu_sum)
  message(FATAL_ERROR "--backend cpu (${rc}) differs from auto:\n${out}\n---\n${auto_out}")
endif()
message(STATUS "auto with CUDA hidden:\n${auto_out}")

run_runner("${hidden}" "--backend;cuda")
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "--backend cuda with CUDA hidden: exit ${rc}, expected 1:\n${out}\n${err}")
endif()
expect("--backend cuda with CUDA hidden" "${err}"
  "embed: session: NO_DEVICE: CUDA backend: no GPU: cannot load 'libmixprec-hidden-cuda\\.so\\.1'")

# 3. A fake driver with one device; then one that lacks an entry point.
run_runner("MIXPREC_CUDA_DRIVER_LIBRARY=${FAKE_DRIVER}" "--backend;auto")
expect("auto with a fake driver" "${out}" "backend cpu\n"
  "auto chose the CPU backend: CUDA backend: module has no CUDA code: compile it with --arch sm_90")
run_runner("MIXPREC_CUDA_DRIVER_LIBRARY=${FAKE_DRIVER}" "--backend;cuda")
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "--backend cuda, module without CUDA code: exit ${rc}:\n${out}\n${err}")
endif()
expect("--backend cuda, module without CUDA code" "${err}"
  "embed: session: FAILED_PRECONDITION: CUDA backend: module has no CUDA code: compile it with --arch sm_90")
run_runner("MIXPREC_CUDA_DRIVER_LIBRARY=${FAKE_DRIVER};MIXPREC_FAKE_CUDA_MISSING=cuLaunchKernel"
           "--backend;cuda")
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "--backend cuda, driver without cuLaunchKernel: exit ${rc}:\n${out}\n${err}")
endif()
expect("--backend cuda, driver without cuLaunchKernel" "${err}"
  "NO_DEVICE: CUDA backend: no GPU: the CUDA driver '.*' \\(CUDA 13\\.0\\) lacks cuLaunchKernel")
