# Builds the frame decoder's fuzz target with clang (project/) and runs libFuzzer on it.
#   cmake -DSOURCE_DIR=<checkout> -DWORK_DIR=<dir> -DCLANG=<clang++> [-DSECONDS=20]
#         [-DGENERATOR=Ninja] [-DLAUNCHER=ccache] -P run_fuzz.cmake
# WORK_DIR keeps the build, the corpus (each run continues the last) and findings/.
foreach(_required SOURCE_DIR WORK_DIR CLANG)
  if(NOT ${_required})
    message(FATAL_ERROR "run_fuzz.cmake: -D${_required}=... is required")
  endif()
endforeach()
if(NOT SECONDS)
  set(SECONDS 20)
endif()
if(NOT GENERATOR)
  set(GENERATOR Ninja)
endif()

set(_build_dir "${WORK_DIR}/build")
set(_configure_command
    "${CMAKE_COMMAND}" -S "${SOURCE_DIR}/tests/cluster/fuzz/project" -B "${_build_dir}"
    -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CLANG}" "-DTROUPE_SOURCE_DIR=${SOURCE_DIR}"
    -DCMAKE_BUILD_TYPE=Debug)
if(LAUNCHER)
  list(APPEND _configure_command "-DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}")
endif()
execute_process(COMMAND ${_configure_command} RESULT_VARIABLE _result OUTPUT_QUIET)
if(NOT _result EQUAL 0)
  message(FATAL_ERROR "configuring the frame fuzz project failed (${_result})")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${_build_dir}" RESULT_VARIABLE _result)
if(NOT _result EQUAL 0)
  message(FATAL_ERROR "building the frame fuzz target failed (${_result})")
endif()

file(MAKE_DIRECTORY "${WORK_DIR}/corpus" "${WORK_DIR}/findings")
# -max_len: several frames of the small payloads the target allows, split into many chunks.
execute_process(
  COMMAND "${_build_dir}/troupe_frame_fuzz" "${WORK_DIR}/corpus"
          "-max_total_time=${SECONDS}" -max_len=2048 -timeout=10 -rss_limit_mb=2048
          -print_final_stats=1 "-artifact_prefix=${WORK_DIR}/findings/"
  RESULT_VARIABLE _result)
if(NOT _result EQUAL 0)
  message(FATAL_ERROR
          "the frame fuzzer found a failing input (exit ${_result}): see ${WORK_DIR}/findings")
endif()
