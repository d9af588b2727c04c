# ctest `install_consumer`: installs the troupe build tree TROUPE_BUILD_DIR into a fresh prefix
# under WORK_DIR, then configures, builds and runs the project in CONSUMER_SOURCE_DIR against it
# with find_package(troupe) (every component), and the one in CORE_CONSUMER_SOURCE_DIR (default:
# core_consumer/ beside it) with find_package(troupe COMPONENTS core) while SQLite, OpenSSL and
# pkg-config cannot be found. The consumer is compiled with the same compiler, build type and
# sanitizer flags as the build under test, so that it can link the installed static libraries.
#
#   cmake -DTROUPE_BUILD_DIR=... -DWORK_DIR=... -DCONSUMER_SOURCE_DIR=...
#         [-DCORE_CONSUMER_SOURCE_DIR=...] [-DGENERATOR=...]
#         [-DCXX_COMPILER=...] [-DCXX_COMPILER_LAUNCHER=...] [-DBUILD_TYPE=...]
#         [-DSANITIZER_FLAGS="..."] -P install_consumer.cmake

cmake_minimum_required(VERSION 3.25)

foreach(_required IN ITEMS TROUPE_BUILD_DIR WORK_DIR CONSUMER_SOURCE_DIR)
  if(NOT ${_required})
    message(FATAL_ERROR "install_consumer: -D${_required}=... is required")
  endif()
endforeach()

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "install_consumer: ${what} failed (${_rc})")
  endif()
endfunction()

if(NOT CORE_CONSUMER_SOURCE_DIR)
  get_filename_component(CORE_CONSUMER_SOURCE_DIR "${CONSUMER_SOURCE_DIR}/../core_consumer" ABSOLUTE)
endif()

set(_prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${_prefix}" "${WORK_DIR}/consumer-build" "${WORK_DIR}/core-consumer-build")

run_step("cmake --install" "${CMAKE_COMMAND}" --install "${TROUPE_BUILD_DIR}" --prefix "${_prefix}")

# Configures, builds and runs the consumer in `source` (in WORK_DIR/`name`), with `ARGN` added
# to its configure line.
function(check_consumer name source)
  set(_build "${WORK_DIR}/${name}")
  set(_configure "${CMAKE_COMMAND}" -S "${source}" -B "${_build}"
                 "-DCMAKE_PREFIX_PATH=${_prefix}"
                 # The consumer must find troupe in the prefix, never in the user's registry.
                 -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF ${ARGN})
  if(GENERATOR)
    list(APPEND _configure -G "${GENERATOR}")
  endif()
  if(CXX_COMPILER)
    list(APPEND _configure "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
  endif()
  if(CXX_COMPILER_LAUNCHER)
    list(APPEND _configure "-DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_COMPILER_LAUNCHER}")
  endif()
  if(BUILD_TYPE)
    list(APPEND _configure "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
  endif()
  if(SANITIZER_FLAGS)
    list(APPEND _configure "-DCMAKE_CXX_FLAGS=${SANITIZER_FLAGS}"
                           "-DCMAKE_EXE_LINKER_FLAGS=${SANITIZER_FLAGS}")
  endif()
  run_step("configuring ${name}" ${_configure})
  run_step("building ${name}" "${CMAKE_COMMAND}" --build "${_build}")
  run_step("running ${name}" "${_build}/consumer")
endfunction()

check_consumer(consumer-build "${CONSUMER_SOURCE_DIR}")
check_consumer(core-consumer-build "${CORE_CONSUMER_SOURCE_DIR}"
               -DCMAKE_DISABLE_FIND_PACKAGE_SQLite3=ON -DCMAKE_DISABLE_FIND_PACKAGE_OpenSSL=ON
               -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON)
message(STATUS "install_consumer: installed troupe in ${_prefix}; both consumers built and ran")
