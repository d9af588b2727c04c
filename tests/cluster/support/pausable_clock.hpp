#pragma once
// A clock for one node of a multi-node test that pauses as a stopped process does. freeze()
// stops its time and holds every callback that falls due; resume_time() lets its time catch up
// with the inner clock while callbacks stay held: the moment after SIGCONT before any timer
// thread has run; release() runs what was held and lets callbacks through again.

#include <troupe/core/clock.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace troupe::cluster::test {

class pausable_clock final : public troupe::clock,
                             public std::enable_shared_from_this<pausable_clock> {
 public:
  explicit pausable_clock(std::shared_ptr<troupe::clock> inner) : inner_(std::move(inner)) {}
  ~pausable_clock() override {
    std::lock_guard lock(mutex_);
    for (const auto& [id, t] : timers_) inner_->cancel(t.inner);
  }

  [[nodiscard]] time_point now() const noexcept override {
    const auto frozen = frozen_ticks_.load(std::memory_order_acquire);
    return frozen != 0 ? time_point{duration{frozen}} : inner_->now();
  }

  timer_id schedule_at(time_point at, callback fn) override {
    std::lock_guard lock(mutex_);
    const timer_id id = ++next_;
    auto& t = timers_[id];
    t.fn = std::move(fn);
    t.inner = inner_->schedule_at(at, [weak = weak_from_this(), id] {
      if (auto self = weak.lock()) self->fire(id);
    });
    return id;
  }

  bool cancel(timer_id id) noexcept override {
    std::lock_guard lock(mutex_);
    auto it = timers_.find(id);
    if (it == timers_.end()) return false;
    inner_->cancel(it->second.inner);
    timers_.erase(it);
    return true;
  }

  /// Stops time and holds every callback from now on.
  void freeze() {
    std::lock_guard lock(mutex_);
    holding_ = true;
    frozen_ticks_.store(inner_->now().time_since_epoch().count(), std::memory_order_release);
  }
  /// Time runs again (it jumps to the inner clock's); callbacks stay held.
  void resume_time() { frozen_ticks_.store(0, std::memory_order_release); }
  /// Runs every callback held, in the order they fell due, and holds none from now on.
  void release() {
    std::vector<callback> due;
    {
      std::lock_guard lock(mutex_);
      holding_ = false;
      frozen_ticks_.store(0, std::memory_order_release);
      for (const auto id : held_) {
        auto it = timers_.find(id);
        if (it == timers_.end()) continue;  // cancelled while held
        due.push_back(std::move(it->second.fn));
        timers_.erase(it);
      }
      held_.clear();
    }
    for (auto& fn : due) {
      fired_.fetch_add(1, std::memory_order_acq_rel);
      fn();
    }
  }
  /// Runs every callback still waiting, now, in the order they were scheduled: a simulated
  /// node's slow disk finishes the writes under way as its process dies, whether or not anyone
  /// still waits for their answers (whole_cluster_sim.hpp).
  void run_all_now() {
    for (auto& [id, t] : take_all()) {
      fired_.fetch_add(1, std::memory_order_acq_rel);
      t.fn();
    }
  }
  /// How many callbacks have run so far (a simulation looks again at a node whose timers ran).
  [[nodiscard]] std::uint64_t fired() const noexcept {
    return fired_.load(std::memory_order_acquire);
  }
  /// Cancels every timer, so that what their callbacks hold goes now (a test's teardown, before
  /// the executors those callbacks would post to are destroyed).
  void cancel_all() { take_all(); }

 private:
  struct timer {
    callback fn;
    timer_id inner = 0;
  };

  /// Takes every timer out, cancelled on the inner clock, so that none fires from there.
  std::map<timer_id, timer> take_all() {
    std::map<timer_id, timer> taken;
    std::lock_guard lock(mutex_);
    for (const auto& [id, t] : timers_) inner_->cancel(t.inner);
    taken.swap(timers_);
    held_.clear();
    return taken;
  }

  void fire(timer_id id) {
    callback fn;
    {
      std::lock_guard lock(mutex_);
      auto it = timers_.find(id);
      if (it == timers_.end()) return;
      if (holding_) {
        held_.push_back(id);
        return;
      }
      fn = std::move(it->second.fn);
      timers_.erase(it);
    }
    fired_.fetch_add(1, std::memory_order_acq_rel);
    fn();
  }

  const std::shared_ptr<troupe::clock> inner_;
  std::atomic<time_point::rep> frozen_ticks_{0};  // 0: not frozen
  std::atomic<std::uint64_t> fired_{0};
  std::mutex mutex_;
  timer_id next_ = 0;
  std::map<timer_id, timer> timers_;
  std::vector<timer_id> held_;
  bool holding_ = false;
};

}  // namespace troupe::cluster::test
