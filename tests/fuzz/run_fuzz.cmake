# Builds one libFuzzer target with clang (the project in project/, apart from the main build,
# which may use GCC, without libFuzzer) and runs it for a while.
#   cmake -DSOURCE_DIR=<checkout> -DWORK_DIR=<dir> -DCLANG=<clang++> -DTARGET=<fuzz target>
#         [-DMAX_LEN=4096] [-DSECONDS=20] [-DGENERATOR=Ninja] [-DLAUNCHER=ccache] -P run_fuzz.cmake
# WORK_DIR keeps the build, the corpus (each run continues where the last stopped) and
# findings/ (a failing input; rerun it with WORK_DIR/build/<target> FILE).
foreach(_required SOURCE_DIR WORK_DIR CLANG TARGET)
  if(NOT ${_required})
    message(FATAL_ERROR "run_fuzz.cmake: -D${_required}=... is required")
  endif()
endforeach()
if(NOT SECONDS)
  set(SECONDS 20)
endif()
if(NOT MAX_LEN)
  set(MAX_LEN 4096)
endif()
if(NOT GENERATOR)
  set(GENERATOR Ninja)
endif()

set(_build "${WORK_DIR}/build")
set(_configure "${CMAKE_COMMAND}" -S "${SOURCE_DIR}/tests/fuzz/project" -B "${_build}"
               -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CLANG}" "-DTROUPE_SOURCE_DIR=${SOURCE_DIR}"
               -DCMAKE_BUILD_TYPE=Debug)
if(LAUNCHER)
  list(APPEND _configure "-DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}")
endif()
execute_process(COMMAND ${_configure} RESULT_VARIABLE _rc OUTPUT_QUIET)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "configuring the fuzz project failed (${_rc})")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${_build}" --target "${TARGET}" RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "building ${TARGET} failed (${_rc})")
endif()

file(MAKE_DIRECTORY "${WORK_DIR}/corpus" "${WORK_DIR}/findings")
execute_process(
  COMMAND "${_build}/${TARGET}" "${WORK_DIR}/corpus"
          "-max_total_time=${SECONDS}" "-max_len=${MAX_LEN}" -timeout=10 -rss_limit_mb=2048
          -print_final_stats=1 "-artifact_prefix=${WORK_DIR}/findings/"
  RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${TARGET} found a failing input (exit ${_rc}): see ${WORK_DIR}/findings")
endif()
