#pragma once
/// INTERNAL. Runtime signals that targets other than actor cells (probes) also understand.

#include <troupe/core/detail/actor_target.hpp>
#include <troupe/core/detail/envelope.hpp>

namespace troupe::detail {

/// "`who` has stopped", sent to each of its watchers.
struct terminated_message final : system_message {
  explicit terminated_message(intrusive_ptr<actor_target> w) : who(std::move(w)) {}
  void apply(actor_cell& cell) override;
  intrusive_ptr<actor_target> who;
};

/// "Tell `watcher` when you stop."
struct watch_message final : system_message {
  explicit watch_message(intrusive_ptr<actor_target> w) : watcher(std::move(w)) {}
  void apply(actor_cell& cell) override;
  void on_undelivered(actor_target& target) override;
  intrusive_ptr<actor_target> watcher;
};

struct unwatch_message final : system_message {
  explicit unwatch_message(intrusive_ptr<actor_target> w) : watcher(std::move(w)) {}
  void apply(actor_cell& cell) override;
  intrusive_ptr<actor_target> watcher;
};

struct stop_message final : system_message {
  void apply(actor_cell& cell) override;
};

}  // namespace troupe::detail
