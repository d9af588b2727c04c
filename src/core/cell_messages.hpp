#pragma once
/// INTERNAL. The runtime signals cells send each other, shared by the actor_cell*.cpp files.

#include <troupe/core/detail/actor_cell.hpp>
#include <troupe/core/detail/envelope.hpp>
#include <troupe/core/supervision.hpp>

#include <cstdint>
#include <exception>
#include <string>

namespace troupe::detail {

/// "<type>: <what()>" of an exception, for logs and error messages.
std::string describe_exception(const std::exception_ptr& e);

struct child_terminated_message final : system_message {
  explicit child_terminated_message(intrusive_ptr<actor_cell> c) : child(std::move(c)) {}
  void apply(actor_cell& cell) override { cell.handle_child_terminated(*child); }
  intrusive_ptr<actor_cell> child;
};

struct child_failed_message final : system_message {
  child_failed_message(intrusive_ptr<actor_cell> c, std::exception_ptr e)
      : child(std::move(c)), error(std::move(e)) {}
  void apply(actor_cell& cell) override { cell.handle_child_failed(*child, error); }
  intrusive_ptr<actor_cell> child;
  std::exception_ptr error;
};

struct directive_message final : system_message {
  directive_message(directive d, std::exception_ptr e, supervisor_strategy s)
      : what(d), error(std::move(e)), strategy(std::move(s)) {}
  void apply(actor_cell& cell) override;
  directive what;
  std::exception_ptr error;
  supervisor_strategy strategy;
};

struct restart_now_message final : system_message {
  explicit restart_now_message(std::exception_ptr e) : error(std::move(e)) {}
  void apply(actor_cell& cell) override;
  std::exception_ptr error;
};

/// Runs a member function of the cell later in the same turn (after the current step).
struct deferred_message final : system_message {
  explicit deferred_message(void (actor_cell::*f)()) : fn(f) {}
  void apply(actor_cell& cell) override { (cell.*fn)(); }
  void (actor_cell::*fn)();
};

struct idle_check_message final : system_message {
  explicit idle_check_message(std::uint64_t g) : generation(g) {}
  void apply(actor_cell& cell) override { cell.handle_timer_check(generation); }
  std::uint64_t generation;
};

/// Private access to the cell for the signals above.
struct cell_access {
  static void directive(actor_cell& c, const directive_message& m);
  static void restart_now(actor_cell& c, std::exception_ptr error);
};

}  // namespace troupe::detail
