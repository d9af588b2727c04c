# Compiler warnings for troupe's own targets.
#
#   troupe_apply_warnings(<target>)
#
# Adds -Wall -Wextra -Wshadow=local (PRIVATE, so consumers never inherit them) and -Werror
# when TROUPE_WERROR is ON. Stricter flags such as -Wold-style-cast are left out on purpose:
# they fire inside Boost headers that we include through macros.

include_guard(GLOBAL)

set(TROUPE_WARNING_FLAGS -Wall -Wextra -Wshadow=local)

function(troupe_apply_warnings target)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    return()
  endif()
  target_compile_options(${target} PRIVATE ${TROUPE_WARNING_FLAGS})
  if(TROUPE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
    if(TROUPE_SANITIZE STREQUAL "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      # GCC warns that TSan does not model std::atomic_thread_fence (-Wtsan). Asio's fences are
      # compiled out under TSan (troupe_sanitizers.cmake), so such a warning points at a new
      # fence: keep it visible, but do not fail the tsan build on it.
      target_compile_options(${target} PRIVATE -Wno-error=tsan)
    endif()
  endif()
endfunction()
