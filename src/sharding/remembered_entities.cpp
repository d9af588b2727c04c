#include <troupe/sharding/remembered_entities.hpp>

#include <algorithm>
#include <chrono>

namespace troupe::sharding {

start_budget::start_budget(double per_second)
    : per_second_(std::max(per_second, 1.0)),
      // A tenth of a second's worth at once, and never less than one start.
      capacity_(std::max(per_second_ / 10.0, 1.0)),
      tokens_(capacity_) {}

std::size_t start_budget::take(std::size_t wanted, time_point now) {
  std::lock_guard lock(mutex_);
  if (last_ != time_point{} && now > last_) {
    const double seconds = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(capacity_, tokens_ + seconds * per_second_);
  }
  if (now > last_ || last_ == time_point{}) last_ = now;
  const auto taken = static_cast<std::size_t>(std::min(tokens_, static_cast<double>(wanted)));
  tokens_ -= static_cast<double>(taken);
  return taken;
}

}  // namespace troupe::sharding
