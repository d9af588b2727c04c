// The actor cell, part 3: death watch, timers, receive timeout and stash.
#include <troupe/core/actor.hpp>
#include <troupe/core/detail/actor_cell.hpp>
#include <troupe/core/detail/system_messages.hpp>

#include "core/cell_extras.hpp"
#include "core/cell_messages.hpp"
#include "core/system_impl.hpp"

#include <algorithm>

namespace troupe::detail {

namespace {
constexpr std::size_t stash_capacity = 10'000;
}  // namespace

// -- death watch --------------------------------------------------------------------------------

void actor_cell::watch(const intrusive_ptr<actor_target>& target) {
  if (!target || target.get() == this) return;
  auto& watching = ext().watching;
  if (std::find(watching.begin(), watching.end(), target) != watching.end()) return;
  watching.push_back(target);
  target->send_system(new watch_message(intrusive_ptr<actor_target>(this)));
}

void actor_cell::unwatch(const intrusive_ptr<actor_target>& target) {
  if (!ext_) return;
  auto& watching = ext_->watching;
  auto it = std::find(watching.begin(), watching.end(), target);
  if (it == watching.end()) return;
  watching.erase(it);
  target->send_system(new unwatch_message(intrusive_ptr<actor_target>(this)));
}

void actor_cell::handle_watch(const intrusive_ptr<actor_target>& watcher) {
  if (phase_ == phase::dead) {
    watcher->send_system(new terminated_message(intrusive_ptr<actor_target>(this)));
    return;
  }
  auto& watchers = ext().watchers;
  if (std::find(watchers.begin(), watchers.end(), watcher) == watchers.end()) {
    watchers.push_back(watcher);
  }
}

void actor_cell::handle_unwatch(const intrusive_ptr<actor_target>& watcher) {
  if (!ext_) return;
  auto& watchers = ext_->watchers;
  watchers.erase(std::remove(watchers.begin(), watchers.end(), watcher), watchers.end());
}

void actor_cell::handle_terminated(const intrusive_ptr<actor_target>& who) {
  // A stopping actor handles no more signals: its own children stopping is its business only.
  if (!ext_ || actor_ == nullptr || phase_ == phase::dead || phase_ == phase::terminating) return;
  auto& watching = ext_->watching;
  auto it = std::find(watching.begin(), watching.end(), who);
  if (it == watching.end()) return;  // unwatched meanwhile
  watching.erase(it);
  try {
    actor_->on_terminated(untyped_ref(who));
  } catch (...) {
    fail(std::current_exception(), "in on_terminated");
  }
}

// -- timers -------------------------------------------------------------------------------------

void actor_cell::start_timer(const std::string& key, duration delay, bool periodic,
                             timer_message_factory make) {
  cell_extras& x = ext();
  cancel_timer(key);
  const std::uint64_t gen = ++x.timer_generation;
  auto& entry = x.timers[key];
  entry.generation = gen;
  entry.periodic = periodic;
  entry.interval = delay;
  entry.make = std::move(make);
  entry.id = arm_timer(key, entry);
}

timer_id actor_cell::arm_timer(const std::string& key, const timer_entry& entry) {
  intrusive_ptr<actor_cell> self(this);
  return system_.clock().schedule_after(
      entry.interval,
      [self, make = entry.make, key, gen = entry.generation] { self->enqueue(make(key, gen)); });
}

bool actor_cell::accept_timer(envelope_base& e) {
  const timer_info info = e.timer();
  if (!ext_ || info.key == nullptr) return false;
  auto it = ext_->timers.find(*info.key);
  if (it == ext_->timers.end() || it->second.generation != info.generation) return false;
  if (it->second.periodic) {
    it->second.id = arm_timer(it->first, it->second);
  } else {
    ext_->timers.erase(it);
  }
  return true;
}

bool actor_cell::cancel_timer(std::string_view key) {
  if (!ext_) return false;
  auto it = ext_->timers.find(std::string(key));
  if (it == ext_->timers.end()) return false;
  system_.clock().cancel(it->second.id);
  ext_->timers.erase(it);
  return true;
}

void actor_cell::cancel_all_timers() {
  if (!ext_) return;
  for (auto& [key, entry] : ext_->timers) system_.clock().cancel(entry.id);
  ext_->timers.clear();
}

bool actor_cell::timer_active(std::string_view key) const {
  return ext_ && ext_->timers.count(std::string(key)) != 0;
}

void actor_cell::set_receive_timeout(duration d, std::function<envelope_base*()> make) {
  cancel_receive_timeout();
  if (d <= duration::zero()) return;
  cell_extras& x = ext();
  x.idle_after = d;
  x.idle_make = std::move(make);
  x.idle_last = system_.clock().now();
  arm_idle_check();
}

void actor_cell::cancel_receive_timeout() {
  if (!ext_ || !ext_->idle_make) return;
  system_.clock().cancel(ext_->idle_timer);
  ext_->idle_timer = 0;
  ext_->idle_make = nullptr;
  ++ext_->idle_generation;
}

void actor_cell::arm_idle_check() {
  cell_extras& x = ext();
  system_.clock().cancel(x.idle_timer);
  const std::uint64_t gen = ++x.idle_generation;
  intrusive_ptr<actor_cell> self(this);
  x.idle_timer = system_.clock().schedule_at(
      x.idle_last + x.idle_after, [self, gen] { self->send_system(new idle_check_message(gen)); });
}

void actor_cell::handle_timer_check(std::uint64_t generation) {
  if (!ext_ || !ext_->idle_make || generation != ext_->idle_generation) return;
  if (phase_ != phase::running) return;
  const time_point now = system_.clock().now();
  if (now - ext_->idle_last >= ext_->idle_after) {
    ext_->idle_timer = 0;
    enqueue(ext_->idle_make());  // re-armed once it has been handled
  } else {
    arm_idle_check();
  }
}

// -- stash --------------------------------------------------------------------------------------

void actor_cell::stash(envelope_base* e) {
  cell_extras& x = ext();
  if (x.stash.size() >= stash_capacity) {
    delete e;
    throw error(errc::stash_overflow,
                "stash of " + path() + " is full (" + std::to_string(stash_capacity) + ")");
  }
  x.stash.push_back(e);
}

void actor_cell::unstash_all() {
  if (!ext_ || ext_->stash.empty()) return;
  auto& x = *ext_;
  // Stashed messages go before those still waiting from an earlier unstash_all.
  x.unstashed.insert(x.unstashed.end(), x.stash.rbegin(), x.stash.rend());
  x.stash.clear();
}

std::size_t actor_cell::stash_size() const { return ext_ ? ext_->stash.size() : 0; }

}  // namespace troupe::detail
