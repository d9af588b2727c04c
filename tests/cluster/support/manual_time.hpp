#pragma once
// Time for single-threaded cluster tests: a manual clock and an io_context polled on the test
// thread, so every timer and every handler runs in a fixed order.

#include <troupe/core/clock.hpp>

#include <boost/asio/io_context.hpp>

#include <algorithm>

namespace troupe::cluster::test_time {

/// Runs every handler that is ready now.
inline void poll(boost::asio::io_context& io) {
  io.restart();
  io.poll();
}

/// Moves `clock` by `d`, stopping at each deadline on the way to call `run`, which runs what
/// fell due and what that set going (before the first step and after the last too).
template <class Run>
void let_time_pass(manual_clock& clock, duration d, Run&& run) {
  const time_point target = clock.now() + d;
  run();
  while (auto next = clock.next_deadline()) {
    if (*next > target) break;
    clock.advance(std::max(*next - clock.now(), duration::zero()));
    run();
  }
  clock.advance(target - clock.now());
  run();
}

/// The same, running the handlers `io` has ready at each stop.
inline void let_time_pass(manual_clock& clock, boost::asio::io_context& io, duration d) {
  let_time_pass(clock, d, [&] { poll(io); });
}

}  // namespace troupe::cluster::test_time
