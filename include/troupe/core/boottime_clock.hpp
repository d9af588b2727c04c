#pragma once
/// A real clock that keeps counting while the machine is suspended, for lease deadlines.

#include <troupe/core/clock.hpp>

#include <memory>

namespace troupe {

/// A real clock whose now() reads CLOCK_BOOTTIME, which, unlike steady_clock (CLOCK_MONOTONIC),
/// counts the time the machine is suspended. Lease deadlines use it: etcd's clock runs on while
/// this machine sleeps, so a deadline measured on a clock that stopped would still be believed
/// after etcd had expired the lease. Its time points are not comparable with steady_clock's.
std::shared_ptr<clock> make_boottime_clock();

}  // namespace troupe
