#pragma once
// The two ways the cluster's store-driven objects (coordinator runner, placement) continue on
// their strand: a store handler that resumes there, and a step that runs there after a delay on
// the object's clock. Both hold the object weakly and skip the step once it is stopped, so a late
// answer never touches a destroyed or stopped object.

#include <troupe/core/clock.hpp>

#include <boost/asio/post.hpp>

#include <functional>
#include <memory>
#include <set>
#include <system_error>
#include <utility>

namespace troupe::cluster::detail {

/// A store handler that runs `f(self, ec, value)` on `strand` unless `self` is gone or
/// `self.stopped()`.
template <class T, class Self, class Strand, class F>
std::function<void(std::error_code, T)> resume_on(std::weak_ptr<Self> weak, Strand strand, F f) {
  return [weak = std::move(weak), strand = std::move(strand), f = std::move(f)](std::error_code ec,
                                                                                T value) {
    boost::asio::post(strand, [weak, f, ec, value = std::move(value)]() mutable {
      if (auto self = weak.lock(); self && !self->stopped()) f(*self, ec, std::move(value));
    });
  };
}

/// Runs `step(self)` on `strand` after `delay` on `clock`, unless `self` is gone or stopped by
/// then; the timer's id stays in `timers` (strand-only) until it fires, for cancelling.
template <class Self, class Strand, class Step>
void run_after(troupe::clock& clock, duration delay, std::weak_ptr<Self> weak, Strand strand,
               std::set<timer_id>& timers, Step step) {
  auto id = std::make_shared<timer_id>(0);
  // `timers` is a member of *self, so it lives as long as the lock below succeeds.
  *id = clock.schedule_after(delay, [weak = std::move(weak), strand, step, id, set = &timers] {
    boost::asio::post(strand, [weak, step, id, set] {
      auto self = weak.lock();
      if (!self) return;
      set->erase(*id);
      if (!self->stopped()) step(*self);
    });
  });
  timers.insert(*id);
}

}  // namespace troupe::cluster::detail
