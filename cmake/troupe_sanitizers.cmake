# Sanitizer flags for troupe's own targets, selected by the TROUPE_SANITIZE cache variable:
#
#   ""                   no sanitizer (release builds)
#   "address,undefined"  ASan + UBSan; any UBSan report is fatal (the dev preset)
#   "thread"             TSan (the tsan preset)
#
#   troupe_apply_sanitizers(<target>)
#
# The flags go on both the compile and the link line. For libraries they are also handed on to
# whatever links them inside this build tree ($<BUILD_INTERFACE:...>), so examples and tests that
# link troupe::core are instrumented too; the installed package never carries them.

include_guard(GLOBAL)

set(TROUPE_SANITIZER_FLAGS "")
if(TROUPE_SANITIZE STREQUAL "")
  # nothing
elseif(TROUPE_SANITIZE STREQUAL "address,undefined" OR TROUPE_SANITIZE STREQUAL "undefined,address")
  set(TROUPE_SANITIZER_FLAGS
      -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
elseif(TROUPE_SANITIZE STREQUAL "thread")
  # TSan does not model std::atomic_thread_fence (GCC's -Wtsan said so 96 times), and Boost.Asio
  # 1.81 uses fences in two places, so TSan would see neither the order they give nor its absence:
  #  - its "fenced blocks" around a handler's invocation (detail/fenced_block.hpp, std_fenced_block
  #    when std::atomic exists). Every hand-off those fences stand beside also goes through a
  #    mutex or an atomic read-modify-write that TSan models (the scheduler's and the strands'
  #    queues, the reactor's descriptor locks): BOOST_ASIO_DISABLE_FENCED_BLOCK compiles them out
  #    (null_fenced_block), and TSan checks the synchronization Asio relies on;
  #  - its reference counts (detail/atomic_count.hpp: a release decrement, then an acquire fence
  #    in the thread that frees, e.g. the shared target of an any_io_executor). That fence is
  #    the synchronization itself: BOOST_ASIO_DISABLE_STD_ATOMIC makes Asio count with
  #    boost::detail::atomic_count instead, whose decrement is one acq_rel read-modify-write
  #    (GCC's __atomic builtins), as strong and modelled by TSan. It changes nothing else in Asio
  #    (only fenced_block.hpp and atomic_count.hpp look at BOOST_ASIO_HAS_STD_ATOMIC).
  # Only under TSan: elsewhere the fences are cheaper and correct. Every troupe target and what
  # links it gets the same definitions, so all the code sharing Asio's types agrees.
  set(TROUPE_SANITIZER_FLAGS -fsanitize=thread -fno-omit-frame-pointer
                             -DBOOST_ASIO_DISABLE_FENCED_BLOCK -DBOOST_ASIO_DISABLE_STD_ATOMIC)
else()
  message(FATAL_ERROR
          "TROUPE_SANITIZE='${TROUPE_SANITIZE}': expected '', 'address,undefined' or 'thread'")
endif()

if(TROUPE_SANITIZER_FLAGS AND NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  message(FATAL_ERROR "TROUPE_SANITIZE needs GCC or Clang, not ${CMAKE_CXX_COMPILER_ID}")
endif()

# The same flags as one string, for handing to a separate CMake project (the packaging test).
string(JOIN " " TROUPE_SANITIZER_FLAGS_STRING ${TROUPE_SANITIZER_FLAGS})

function(troupe_apply_sanitizers target)
  if(NOT TROUPE_SANITIZER_FLAGS)
    return()
  endif()
  get_target_property(_type ${target} TYPE)
  if(NOT _type STREQUAL "INTERFACE_LIBRARY")
    target_compile_options(${target} PRIVATE ${TROUPE_SANITIZER_FLAGS})
    target_link_options(${target} PRIVATE ${TROUPE_SANITIZER_FLAGS})
  endif()
  if(_type MATCHES "LIBRARY$")
    target_compile_options(${target} INTERFACE "$<BUILD_INTERFACE:${TROUPE_SANITIZER_FLAGS}>")
    target_link_options(${target} INTERFACE "$<BUILD_INTERFACE:${TROUPE_SANITIZER_FLAGS}>")
  endif()
endfunction()
