#include "troupe/sharding/detail/undelivered.hpp"

#include <exception>
#include <new>
#include <system_error>

namespace troupe::sharding::detail {

std::string describe_current_exception() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception not derived from std::exception";
  }
}

std::error_code current_exception_code(errc otherwise) noexcept {
  try {
    throw;
  } catch (const std::system_error& e) {
    return e.code();
  } catch (...) {
    return make_error_code(otherwise);
  }
}

send_failure current_send_failure(const std::string& node) {
  return {current_exception_code(errc::message_copy_failed),
          "cannot send to node " + node + ": " + describe_current_exception()};
}

std::string copy_failure_reason() {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return "out of memory while passing the message on";
  } catch (...) {
    return "copying or moving the message threw: " + describe_current_exception();
  }
}

}  // namespace troupe::sharding::detail
