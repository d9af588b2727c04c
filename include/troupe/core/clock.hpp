#pragma once
/// Time as the runtime sees it: every deadline (timers, ask timeouts, receive timeouts, backoff)
/// goes through a `clock`, so tests can drive time by hand instead of sleeping.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

namespace troupe {

using duration = std::chrono::steady_clock::duration;
using time_point = std::chrono::steady_clock::time_point;

/// Identifies a scheduled callback; 0 is never a valid id.
using timer_id = std::uint64_t;

/// A source of time that can run callbacks at a time point.
class clock {
 public:
  using callback = std::function<void()>;

  virtual ~clock() = default;

  /// The current time.
  [[nodiscard]] virtual time_point now() const noexcept = 0;

  /// Runs `fn` once, on a thread of the clock, at or soon after `at`. Callbacks must be short:
  /// they enqueue work, they never do it.
  virtual timer_id schedule_at(time_point at, callback fn) = 0;

  /// Cancels a scheduled callback; returns false when it already ran or was cancelled.
  virtual bool cancel(timer_id id) noexcept = 0;

  timer_id schedule_after(duration d, callback fn) { return schedule_at(now() + d, std::move(fn)); }

  /// Sets what the clock calls shortly (tens of us) before a deadline, so that the runtime can
  /// have a thread awake when the callback's work arrives (a parked core takes ~30 us to wake).
  /// Null clears it. It must be short and must not call the clock. Clocks may ignore it.
  virtual void set_wake_hint(callback hint) { (void)hint; }
};

/// The real clock: std::chrono::steady_clock and one timer thread with a 1 ns timer slack.
std::shared_ptr<clock> make_steady_clock();

/// A clock that moves only when told to; `advance` runs due callbacks on the calling thread.
class manual_clock final : public clock {
 public:
  manual_clock();
  ~manual_clock() override;

  [[nodiscard]] time_point now() const noexcept override;
  timer_id schedule_at(time_point at, callback fn) override;
  bool cancel(timer_id id) noexcept override;

  /// Moves time forward by `d`, running every callback that falls due, in deadline order.
  void advance(duration d);
  /// Number of callbacks waiting.
  [[nodiscard]] std::size_t pending() const;
  /// The earliest deadline waiting, if any.
  [[nodiscard]] std::optional<time_point> next_deadline() const;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace troupe
