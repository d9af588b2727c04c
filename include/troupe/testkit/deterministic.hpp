#pragma once
/// Running actors deterministically: no worker threads and a manual clock. Every turn runs on
/// the test's thread inside run_until_idle(), in FIFO order, and time moves only by advance().

#include <troupe/core/actor_system.hpp>
#include <troupe/core/clock.hpp>

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
  /// Runs what is pending (so timers it starts count from now), moves time forward, then runs
  /// what fell due.
  std::size_t advance(duration d) {
    std::size_t turns = run();
    clock_->advance(d);
    return turns + run();
  }

 private:
  std::shared_ptr<manual_clock> clock_;
  actor_system system_;
};

}  // namespace troupe::testkit
