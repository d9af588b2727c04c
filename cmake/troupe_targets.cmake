# Helpers that every troupe target goes through, so that warnings, sanitizers, include paths,
# test registration and install/export rules are decided in one place.
#
#   troupe_add_library(NAME <target> ALIAS troupe::<name>
#                      [SOURCES <file>...]          # none: an INTERFACE (header-only) library
#                      [PUBLIC_LINK <lib>...] [PRIVATE_LINK <lib>...]
#                      [TYPE STATIC|SHARED]         # default: BUILD_SHARED_LIBS decides
#                      [NO_INSTALL])                # keep it out of the installed package
#   An installed library is the package component named after its alias (troupe::sharding is
#   the component `sharding`), with its own export file troupe_<component>Targets.cmake; add its
#   dependencies to cmake/troupeConfig.cmake.in.
#
#   troupe_add_test(NAME <target> SOURCES <file>...
#                   [LABELS <label>...] [LINK <lib>...]
#                   [TIMEOUT <seconds>]             # per test case, default 300
#                   [RUN_SERIAL])                   # never run beside other tests
#
#   troupe_add_bench(NAME <target> SOURCES <file>... [LINK <lib>...])
#   troupe_add_example(NAME <target> SOURCES <file>... [LINK <lib>...])
#   troupe_add_tool(NAME <target> SOURCES <file>... [LINK <lib>...] [NO_INSTALL])
#
# Example:
#   troupe_add_library(NAME troupe_core ALIAS troupe::core
#                      SOURCES actor_system.cpp scheduler.cpp
#                      PUBLIC_LINK Boost::headers spdlog::spdlog Threads::Threads
#                      PRIVATE_LINK ZLIB::ZLIB)
#   troupe_add_test(NAME troupe_core_mailbox_test SOURCES mailbox_test.cpp
#                   LABELS core concurrency LINK troupe::core)
#   troupe_add_bench(NAME troupe_bench_core SOURCES core_bench.cpp
#                    LINK troupe::core benchmark::benchmark_main)

include_guard(GLOBAL)

include(troupe_warnings)
include(troupe_sanitizers)

set(TROUPE_TEST_DEFAULT_TIMEOUT 300 CACHE STRING "Default ctest timeout (s) of one test case")
set(TROUPE_BENCH_ALLOCATOR "jemalloc" CACHE STRING
    "malloc linked into benchmarks when not sanitizing: jemalloc, mimalloc or system")
set_property(CACHE TROUPE_BENCH_ALLOCATOR PROPERTY STRINGS jemalloc mimalloc system)

# -- libraries ---------------------------------------------------------------

function(troupe_add_library)
  cmake_parse_arguments(PARSE_ARGV 0 arg "NO_INSTALL" "NAME;ALIAS;TYPE"
                        "SOURCES;PUBLIC_LINK;PRIVATE_LINK")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "troupe_add_library: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_NAME)
    message(FATAL_ERROR "troupe_add_library: NAME is required")
  endif()
  if(arg_ALIAS AND NOT arg_ALIAS MATCHES "^troupe::[A-Za-z0-9_]+$")
    message(FATAL_ERROR "troupe_add_library(${arg_NAME}): ALIAS must look like troupe::<name>")
  endif()

  if(arg_SOURCES)
    add_library(${arg_NAME} ${arg_TYPE} ${arg_SOURCES})
    set(_public PUBLIC)
    target_include_directories(${arg_NAME} PRIVATE "${PROJECT_SOURCE_DIR}/src")
    set_target_properties(${arg_NAME} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    troupe_apply_warnings(${arg_NAME})
    if(arg_PRIVATE_LINK)
      target_link_libraries(${arg_NAME} PRIVATE ${arg_PRIVATE_LINK})
    endif()
  else()
    if(arg_PRIVATE_LINK)
      message(FATAL_ERROR "troupe_add_library(${arg_NAME}): a header-only library has no PRIVATE_LINK")
    endif()
    add_library(${arg_NAME} INTERFACE)
    set(_public INTERFACE)
  endif()

  target_include_directories(${arg_NAME} ${_public}
    "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>"
    "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
  target_compile_features(${arg_NAME} ${_public} cxx_std_20)
  if(arg_PUBLIC_LINK)
    target_link_libraries(${arg_NAME} ${_public} ${arg_PUBLIC_LINK})
  endif()
  troupe_apply_sanitizers(${arg_NAME})

  if(arg_ALIAS)
    add_library(${arg_ALIAS} ALIAS ${arg_NAME})
    string(REPLACE "troupe::" "" _export_name "${arg_ALIAS}")
    set_target_properties(${arg_NAME} PROPERTIES EXPORT_NAME ${_export_name})
  endif()

  if(NOT arg_NO_INSTALL)
    if(NOT arg_ALIAS)
      message(FATAL_ERROR "troupe_add_library(${arg_NAME}): an installed library needs an ALIAS")
    endif()
    # One export set per library: find_package(troupe COMPONENTS ...) loads only those asked for.
    install(TARGETS ${arg_NAME}
            EXPORT troupe_${_export_name}Targets
            ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
            LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
            RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
    set_property(GLOBAL APPEND PROPERTY TROUPE_EXPORTED_TARGETS ${arg_NAME})
    set_property(GLOBAL APPEND PROPERTY TROUPE_EXPORTED_COMPONENTS ${_export_name})
  endif()
endfunction()

# What `cmake --install` copies must exist, but a tree may have built only a few programs
# (scripts/demo.sh builds only the programs it runs). Called once, before any install rule
# (install rules run in the order they are declared): the first step of an install builds the
# installed libraries and tools this tree lacks; a complete tree builds nothing.
function(troupe_install_builds_what_is_missing)
  if(CMAKE_CONFIGURATION_TYPES)
    return()  # multi-config generators: build the configuration before installing it
  endif()
  set(_script "${PROJECT_BINARY_DIR}/troupe_install_prepare.cmake")
  install(CODE "include(\"${_script}\")")
  # Written at generate time, once every target exists (see troupe_finalize_install()).
  set_property(GLOBAL PROPERTY TROUPE_INSTALL_PREPARE_SCRIPT "${_script}")
endfunction()

# Writes the script troupe_install_builds_what_is_missing() runs, and the umbrella target
# `troupe_installable` it builds; called at the end of the top-level CMakeLists.txt.
function(troupe_finalize_install)
  get_property(_script GLOBAL PROPERTY TROUPE_INSTALL_PREPARE_SCRIPT)
  get_property(_libraries GLOBAL PROPERTY TROUPE_EXPORTED_TARGETS)
  get_property(_tools GLOBAL PROPERTY TROUPE_INSTALLED_TOOLS)
  set(_built "")
  foreach(_target IN LISTS _libraries _tools)
    get_target_property(_type ${_target} TYPE)
    if(NOT _type STREQUAL "INTERFACE_LIBRARY")
      list(APPEND _built ${_target})
    endif()
  endforeach()
  add_custom_target(troupe_installable)
  if(_built)
    add_dependencies(troupe_installable ${_built})
  endif()
  if(NOT _script)
    return()
  endif()
  set(_files "")
  foreach(_target IN LISTS _built)
    string(APPEND _files " \"$<TARGET_FILE:${_target}>\"")
  endforeach()
  file(GENERATE OUTPUT "${_script}" CONTENT
"# Generated by troupe_finalize_install(): builds what `cmake --install` copies when this tree
# has not built all of it yet.
set(_troupe_missing \"\")
foreach(_file IN ITEMS${_files})
  if(NOT EXISTS \"\${_file}\")
    list(APPEND _troupe_missing \"\${_file}\")
  endif()
endforeach()
if(_troupe_missing)
  message(STATUS \"troupe: building the installed targets this tree has not built yet\")
  execute_process(COMMAND \"${CMAKE_COMMAND}\" --build \"${PROJECT_BINARY_DIR}\"
                          --target troupe_installable
                  RESULT_VARIABLE _troupe_rc)
  if(NOT _troupe_rc EQUAL 0)
    message(FATAL_ERROR \"troupe: building the installed targets failed (\${_troupe_rc})\")
  endif()
endif()
")
endfunction()

# -- executables -------------------------------------------------------------

# Shared part of every executable helper: sources, links, private includes, flags.
function(_troupe_add_executable name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;LINK")
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "${name}: SOURCES is required")
  endif()
  add_executable(${name} ${arg_SOURCES})
  target_include_directories(${name} PRIVATE "${PROJECT_SOURCE_DIR}/src")
  target_compile_features(${name} PRIVATE cxx_std_20)
  target_link_libraries(${name} PRIVATE ${arg_LINK} Threads::Threads)
  troupe_apply_warnings(${name})
  troupe_apply_sanitizers(${name})
endfunction()

function(troupe_add_test)
  cmake_parse_arguments(PARSE_ARGV 0 arg "RUN_SERIAL" "NAME;TIMEOUT" "SOURCES;LABELS;LINK")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "troupe_add_test: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_NAME)
    message(FATAL_ERROR "troupe_add_test: NAME is required")
  endif()
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT ${TROUPE_TEST_DEFAULT_TIMEOUT})
  endif()

  _troupe_add_executable(${arg_NAME} SOURCES ${arg_SOURCES}
                         LINK ${arg_LINK} GTest::gmock GTest::gtest_main)
  target_include_directories(${arg_NAME} PRIVATE "${PROJECT_SOURCE_DIR}/tests")

  set(_properties TIMEOUT ${arg_TIMEOUT})
  if(arg_RUN_SERIAL)
    list(APPEND _properties RUN_SERIAL TRUE)
  endif()
  # PRE_TEST: list the test cases when ctest starts, not after each link. A build tree that
  # built only some test binaries (the tsan preset) then still runs the ones it has.
  gtest_discover_tests(${arg_NAME}
                       DISCOVERY_MODE PRE_TEST
                       DISCOVERY_TIMEOUT 60
                       TEST_LIST ${arg_NAME}_TESTS
                       PROPERTIES ${_properties})
  if(arg_LABELS)
    # CMake 3.25's gtest_discover_tests() flattens list-valued PROPERTIES, so a second label
    # would be lost. Set the labels from a ctest include file that runs after discovery and
    # sees the discovered names in ${<target>_TESTS}.
    set(_labels_file "${CMAKE_CURRENT_BINARY_DIR}/${arg_NAME}_labels.cmake")
    file(WRITE "${_labels_file}"
         "if(DEFINED ${arg_NAME}_TESTS AND NOT \"\${${arg_NAME}_TESTS}\" STREQUAL \"\")\n"
         "  set_tests_properties(\${${arg_NAME}_TESTS} PROPERTIES LABELS \"${arg_LABELS}\")\n"
         "endif()\n")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${_labels_file}")
  endif()

  set_property(GLOBAL APPEND PROPERTY TROUPE_TEST_TARGETS ${arg_NAME})
  if("concurrency" IN_LIST arg_LABELS)
    set_property(GLOBAL APPEND PROPERTY TROUPE_CONCURRENCY_TEST_TARGETS ${arg_NAME})
  endif()
endfunction()

# Creates `troupe_tests` (every test binary) and `troupe_concurrency_tests` (binaries with the
# label `concurrency`); called once at the end of the top-level CMakeLists.txt.
function(troupe_finalize_test_targets)
  if(NOT TROUPE_BUILD_TESTS)
    return()
  endif()
  get_property(_all GLOBAL PROPERTY TROUPE_TEST_TARGETS)
  get_property(_concurrency GLOBAL PROPERTY TROUPE_CONCURRENCY_TEST_TARGETS)
  add_custom_target(troupe_tests)
  add_custom_target(troupe_concurrency_tests)
  if(_all)
    add_dependencies(troupe_tests ${_all})
  endif()
  if(_concurrency)
    add_dependencies(troupe_concurrency_tests ${_concurrency})
  endif()
endfunction()

# The allocator linked into benchmarks, as the imported target troupe_bench_allocator (empty
# when sanitizing: ASan and TSan must own malloc themselves).
function(_troupe_bench_allocator out_var)
  if(TARGET troupe_bench_allocator)
    set(${out_var} troupe_bench_allocator PARENT_SCOPE)
    return()
  endif()
  if(TROUPE_SANITIZE OR TROUPE_BENCH_ALLOCATOR STREQUAL "system")
    set(${out_var} "" PARENT_SCOPE)
    return()
  endif()
  add_library(troupe_bench_allocator INTERFACE IMPORTED GLOBAL)
  if(TROUPE_BENCH_ALLOCATOR STREQUAL "jemalloc")
    find_package(PkgConfig QUIET)
    if(PKG_CONFIG_FOUND)
      pkg_check_modules(TROUPE_JEMALLOC QUIET IMPORTED_TARGET GLOBAL jemalloc)
    endif()
    if(TARGET PkgConfig::TROUPE_JEMALLOC)
      target_link_libraries(troupe_bench_allocator INTERFACE PkgConfig::TROUPE_JEMALLOC)
    else()
      find_library(TROUPE_JEMALLOC_LIBRARY jemalloc REQUIRED)
      target_link_libraries(troupe_bench_allocator INTERFACE "${TROUPE_JEMALLOC_LIBRARY}")
    endif()
  elseif(TROUPE_BENCH_ALLOCATOR STREQUAL "mimalloc")
    find_package(mimalloc CONFIG REQUIRED)
    target_link_libraries(troupe_bench_allocator INTERFACE mimalloc)
  else()
    message(FATAL_ERROR "TROUPE_BENCH_ALLOCATOR='${TROUPE_BENCH_ALLOCATOR}': "
                        "expected jemalloc, mimalloc or system")
  endif()
  set(${out_var} troupe_bench_allocator PARENT_SCOPE)
endfunction()

function(troupe_add_bench)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME" "SOURCES;LINK")
  if(arg_UNPARSED_ARGUMENTS OR NOT arg_NAME)
    message(FATAL_ERROR "troupe_add_bench: NAME and SOURCES required; "
                        "unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  _troupe_bench_allocator(_allocator)
  _troupe_add_executable(${arg_NAME} SOURCES ${arg_SOURCES}
                         LINK ${arg_LINK} benchmark::benchmark ${_allocator})
  set_target_properties(${arg_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/bench")
endfunction()

function(troupe_add_example)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME" "SOURCES;LINK")
  if(arg_UNPARSED_ARGUMENTS OR NOT arg_NAME)
    message(FATAL_ERROR "troupe_add_example: NAME and SOURCES required; "
                        "unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  _troupe_add_executable(${arg_NAME} SOURCES ${arg_SOURCES} LINK ${arg_LINK})
endfunction()

function(troupe_add_tool)
  cmake_parse_arguments(PARSE_ARGV 0 arg "NO_INSTALL" "NAME" "SOURCES;LINK")
  if(arg_UNPARSED_ARGUMENTS OR NOT arg_NAME)
    message(FATAL_ERROR "troupe_add_tool: NAME and SOURCES required; "
                        "unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  _troupe_add_executable(${arg_NAME} SOURCES ${arg_SOURCES} LINK ${arg_LINK})
  if(NOT arg_NO_INSTALL)
    install(TARGETS ${arg_NAME} RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
    set_property(GLOBAL APPEND PROPERTY TROUPE_INSTALLED_TOOLS ${arg_NAME})
  endif()
endfunction()

# troupe_add_unit_tests(LAYER <layer> LINK <targets...>)
#   One test binary per tests/<layer>/<unit>_test.cpp (found by glob), named
#   troupe_<layer>_<unit>_test, labelled <layer>. A file adds labels on a line of its own, e.g.
#   "// ctest-labels: concurrency" (those also run under ThreadSanitizer).
function(troupe_add_unit_tests)
  cmake_parse_arguments(ARG "" "LAYER" "LINK" ${ARGN})
  file(GLOB _files CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*_test.cpp")
  foreach(_file IN LISTS _files)
    get_filename_component(_unit "${_file}" NAME_WE)
    file(STRINGS "${_file}" _label_line LIMIT_COUNT 1 REGEX "^// ctest-labels:")
    set(_labels ${ARG_LAYER})
    if(_label_line)
      string(REGEX REPLACE "^// ctest-labels:[ ]*" "" _extra "${_label_line}")
      separate_arguments(_extra)
      list(APPEND _labels ${_extra})
    endif()
    troupe_add_test(NAME troupe_${ARG_LAYER}_${_unit} SOURCES "${_file}" LABELS ${_labels}
                    LINK ${ARG_LINK})
  endforeach()
endfunction()
