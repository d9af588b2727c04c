#pragma once
/// What a parent does when a child fails: Akka's four directives, decided per exception,
/// with a bounded number of restarts in a window and an exponential backoff between them.

#include <troupe/core/clock.hpp>

#include <chrono>
#include <exception>
#include <functional>

namespace troupe {

/// The parent's answer to a child's failure.
enum class directive {
  resume,    ///< keep the child's state and go on with its next message
  restart,   ///< replace the child's instance with a fresh one; its mailbox is kept
  stop,      ///< stop the child
  escalate,  ///< fail the parent with the child's exception
};

/// How a parent treats its failing children.
struct supervisor_strategy {
  /// Picks the directive for an exception; the default restarts on anything.
  std::function<directive(const std::exception_ptr&)> decider = [](const std::exception_ptr&) {
    return directive::restart;
  };
  /// Restarts allowed within `window`; one more stops the child.
  int max_restarts = 10;
  std::chrono::milliseconds window = std::chrono::minutes(1);
  /// Delay before the n-th consecutive restart within the window: 0 for the first, then
  /// min_backoff doubled each time, capped at max_backoff.
  std::chrono::milliseconds min_backoff = std::chrono::milliseconds(10);
  std::chrono::milliseconds max_backoff = std::chrono::seconds(1);

  /// Restart on any failure (the default).
  static supervisor_strategy restarting() { return {}; }
  /// Stop the child on any failure.
  static supervisor_strategy stopping() {
    return {.decider = [](const std::exception_ptr&) { return directive::stop; }};
  }
  /// Keep the child's state and skip the failed message.
  static supervisor_strategy resuming() {
    return {.decider = [](const std::exception_ptr&) { return directive::resume; }};
  }
  /// Fail the parent too.
  static supervisor_strategy escalating() {
    return {.decider = [](const std::exception_ptr&) { return directive::escalate; }};
  }
};

}  // namespace troupe
