# Builds the codec fuzz target with clang (project/) and runs libFuzzer on it for a while.
#   cmake -DSOURCE_DIR=<checkout> -DWORK_DIR=<dir> -DCLANG=<clang++> [-DSECONDS=20]
#         [-DGENERATOR=Ninja] [-DLAUNCHER=ccache] -P run_fuzz.cmake
# The corpus is kept in WORK_DIR/corpus, so each run continues where the last one stopped.
foreach(_var SOURCE_DIR WORK_DIR CLANG)
  if(NOT ${_var})
    message(FATAL_ERROR "run_fuzz.cmake: -D${_var}=... is required")
  endif()
endforeach()
if(NOT SECONDS)
  set(SECONDS 20)
endif()
if(NOT GENERATOR)
  set(GENERATOR Ninja)
endif()

set(_build "${WORK_DIR}/build")
set(_configure "${CMAKE_COMMAND}" -S "${SOURCE_DIR}/tests/persistence/fuzz/project" -B "${_build}"
               -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CLANG}" "-DTROUPE_SOURCE_DIR=${SOURCE_DIR}"
               -DCMAKE_BUILD_TYPE=Debug)
if(LAUNCHER)
  list(APPEND _configure "-DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}")
endif()
execute_process(COMMAND ${_configure} RESULT_VARIABLE _rc OUTPUT_QUIET)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "configuring the fuzz project failed (${_rc})")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${_build}" RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "building the fuzz target failed (${_rc})")
endif()

file(MAKE_DIRECTORY "${WORK_DIR}/corpus" "${WORK_DIR}/findings")
execute_process(
  COMMAND "${_build}/troupe_codec_fuzz" "${WORK_DIR}/corpus"
          "-max_total_time=${SECONDS}" -max_len=4096 -timeout=10 -rss_limit_mb=2048
          -print_final_stats=1 "-artifact_prefix=${WORK_DIR}/findings/"
  RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "the codec fuzzer found a failing input (exit ${_rc}): see ${WORK_DIR}/findings")
endif()
