#pragma once
/// INTERNAL. A one-shot timer on a troupe::clock whose handler runs on an executor. The remoting
/// and the memory network time everything with it rather than with Asio's own timers, so that
/// they follow the actor system's clock: a simulation's manual clock drives them too.

#include <troupe/core/clock.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <functional>
#include <memory>

namespace troupe::cluster::detail {

class clock_timer {
 public:
  /// The clock must outlive the timer (it is the actor system's, or the network's).
  clock_timer(troupe::clock& clock, boost::asio::any_io_executor executor);
  ~clock_timer();
  clock_timer(const clock_timer&) = delete;
  clock_timer& operator=(const clock_timer&) = delete;

  /// Posts `fn` to the executor once `d` has passed on the clock, replacing the wait armed
  /// before, if any.
  void wait_for(duration d, std::function<void()> fn);
  /// Drops the armed wait: its handler never runs (unless the clock had already posted it).
  void cancel() noexcept;

 private:
  struct wait;

  troupe::clock& clock_;
  boost::asio::any_io_executor executor_;
  std::shared_ptr<wait> armed_;
  timer_id id_ = 0;
};

}  // namespace troupe::cluster::detail
