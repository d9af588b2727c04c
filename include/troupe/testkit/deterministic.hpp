#pragma once
/// Running actors deterministically: no worker threads and a manual clock. Every turn runs on
/// the test's thread inside run_until_idle(), in FIFO order, and time moves only by advance().

#include <troupe/core/actor_system.hpp>
#include <troupe/core/clock.hpp>

#include <algorithm>
#include <memory>
#include <string>

namespace troupe::testkit {

/// An actor system whose scheduling and time the test drives by hand.
class deterministic_system {
 public:
  explicit deterministic_system(std::string name = "deterministic")
      : clock_(std::make_shared<manual_clock>()),
        system_(system_config{}
                    .with_name(std::move(name))
                    .with_manual_scheduling()
                    .with_clock(clock_)) {}

  [[nodiscard]] actor_system& system() noexcept { return system_; }
  [[nodiscard]] manual_clock& clock() noexcept { return *clock_; }
  /// Runs every pending turn; returns how many ran.
  std::size_t run() { return system_.run_until_idle(); }
  /// Runs what is pending (so timers it starts count from now), then moves time forward by `d`
  /// from deadline to deadline, running what fell due at each as a live system would: a
  /// periodic timer, re-armed when its actor takes the tick, ticks again within the same call.
  std::size_t advance(duration d) {
    std::size_t turns = run();
    const time_point target = clock_->now() + d;
    while (auto next = clock_->next_deadline()) {
      if (*next > target) break;
      clock_->advance(std::max(*next - clock_->now(), duration::zero()));
      turns += run();
    }
    clock_->advance(target - clock_->now());
    return turns + run();
  }

 private:
  std::shared_ptr<manual_clock> clock_;
  actor_system system_;
};

}  // namespace troupe::testkit
