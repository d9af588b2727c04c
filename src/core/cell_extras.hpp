#pragma once
/// INTERNAL. The parts of an actor cell most actors never use, allocated on first use so that an
/// idle actor stays small: named children, watchers, timers, stash, receive timeout, restart
/// bookkeeping, bounded-mailbox state.

#include <troupe/core/clock.hpp>
#include <troupe/core/detail/actor_cell.hpp>
#include <troupe/core/detail/ref_counted.hpp>
#include <troupe/core/mailbox.hpp>

#include <atomic>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace troupe::detail {

struct timer_entry {
  std::uint64_t generation = 0;
  timer_id id = 0;
  bool periodic = false;
  duration interval{};
  timer_message_factory make;
};

struct bounded_mailbox {
  bounded_mailbox(std::size_t cap, overflow_policy p) : capacity(cap), policy(p) {}
  const std::size_t capacity;
  const overflow_policy policy;
  std::atomic<std::size_t> size{0};
  std::atomic<std::size_t> waiting{0};
  std::mutex mutex;
  std::deque<std::pair<envelope_base*, std::function<void(std::error_code)>>> waiters;
};

struct cell_extras {
  // children (guarded by the system's children lock of this cell): the head of the sibling list
  actor_cell* first_child = nullptr;
  // Keyed by a view of the child's own name (stable while it is registered): no second copy.
  std::unordered_map<std::string_view, actor_cell*> named_children;
  // Some children skipped the index (spawn_options::unique_name): child(name) also scans.
  bool has_unindexed_children = false;

  // death watch
  std::vector<intrusive_ptr<actor_target>> watchers;  // who is told when we stop
  std::vector<intrusive_ptr<actor_target>> watching;  // whom we watch

  // timers
  std::unordered_map<std::string, timer_entry> timers;
  std::uint64_t timer_generation = 0;

  // receive timeout
  duration idle_after{};
  std::function<envelope_base*()> idle_make;
  time_point idle_last{};
  timer_id idle_timer = 0;
  std::uint64_t idle_generation = 0;

  // stash
  // Vectors, not deques: a deque allocates ~0.5 KB as soon as it exists.
  std::vector<envelope_base*> stash;
  std::vector<envelope_base*> unstashed;  // handled before the mailbox; stored last-first

  // coroutine turn
  bool cancel_requested = false;

  // restarts (as a child)
  int restarts = 0;
  time_point restart_window_start{};
  std::exception_ptr pending_restart;
  timer_id restart_timer = 0;             // a restart waiting for its backoff
  std::exception_ptr restart_after_turn;  // a restart waiting for a coroutine handler to end

  // children whose failure we escalated: they wait for our own supervisor's decision
  std::vector<intrusive_ptr<actor_cell>> escalated;

  // sharding: the home of the entities this cell spawns
  const entity_home* child_home = nullptr;
  // child_home's naming scheme, kept here as well: an entity builds its name (its path, in a
  // log line or a dead letter) through its parent cell, which it keeps alive, even after the
  // shard's instance, and with it the home, is gone.
  void (*child_entity_name)(std::string& out, std::string_view entity_id) = nullptr;

  // a bounded mailbox (created with the cell, before anyone else can see it)
  std::unique_ptr<bounded_mailbox> bounded;
};

}  // namespace troupe::detail
