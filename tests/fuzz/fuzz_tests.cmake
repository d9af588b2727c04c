# Short libFuzzer passes, part of the normal test run when clang is installed (scripts/setup.sh
# installs clang-14 and its runtimes): troupe_add_fuzz_test(NAME <ctest name> TARGET <target of
# project/> LABELS <labels> [MAX_LEN <bytes>]) registers one. The first run compiles the target
# (~30 s on 2 cores, then ccache); each pass lasts TROUPE_FUZZ_SECONDS.
#
# A longer pass, from the checkout (the corpus in WORK_DIR/corpus carries over between runs):
#   cmake -DSOURCE_DIR=$PWD -DWORK_DIR=$PWD/build/frame_fuzz -DCLANG=clang++-14 \
#         -DTARGET=troupe_frame_fuzz -DSECONDS=3600 -P tests/fuzz/run_fuzz.cmake
set(TROUPE_FUZZ_SECONDS 20 CACHE STRING "Seconds of each fuzz pass run by ctest")
find_program(TROUPE_FUZZ_CLANG NAMES clang++-14 clang++)
if(NOT TROUPE_FUZZ_CLANG)
  message(STATUS "clang not found: the fuzz tests are not registered")
endif()

function(troupe_add_fuzz_test)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;TARGET;MAX_LEN" "LABELS")
  if(NOT TROUPE_FUZZ_CLANG)
    return()
  endif()
  if(NOT arg_MAX_LEN)
    set(arg_MAX_LEN 4096)
  endif()
  add_test(NAME ${arg_NAME}
           COMMAND "${CMAKE_COMMAND}"
                   "-DSOURCE_DIR=${PROJECT_SOURCE_DIR}"
                   "-DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/${arg_NAME}"
                   "-DCLANG=${TROUPE_FUZZ_CLANG}"
                   "-DTARGET=${arg_TARGET}"
                   "-DMAX_LEN=${arg_MAX_LEN}"
                   "-DSECONDS=${TROUPE_FUZZ_SECONDS}"
                   "-DGENERATOR=${CMAKE_GENERATOR}"
                   "-DLAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER}"
                   -P "${PROJECT_SOURCE_DIR}/tests/fuzz/run_fuzz.cmake")
  set_tests_properties(${arg_NAME} PROPERTIES LABELS "${arg_LABELS}" TIMEOUT 300)
endfunction()
