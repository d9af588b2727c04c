#include "troupe/core/concurrency_gate.hpp"

#include <algorithm>

namespace troupe {

concurrency_gate::concurrency_gate(std::size_t permits)
    : permits_(std::max<std::size_t>(permits, 1)) {}

bool concurrency_gate::enqueue_or_grant(const std::shared_ptr<detail::async_waiter_base>& w) {
  std::lock_guard lock(mutex_);
  // A free permit means nobody live waits: release() hands permits straight to live waiters,
  // so whatever is still queued gave up (was cancelled).
  if (in_use_ < permits_) {
    peak_ = std::max(peak_, ++in_use_);
    return false;
  }
  waiters_.push_back(w);
  return true;
}

void concurrency_gate::release() {
  for (;;) {
    std::shared_ptr<detail::async_waiter_base> next;
    {
      std::lock_guard lock(mutex_);
      if (waiters_.empty()) {
        if (in_use_ > 0) --in_use_;
        return;
      }
      next = std::move(waiters_.front());
      waiters_.pop_front();
    }
    // The permit passes straight to the longest waiter (in_use_ stays), unless it gave up.
    if (next->complete({})) return;
  }
}

std::size_t concurrency_gate::in_use() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

std::size_t concurrency_gate::peak_in_use() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

std::size_t concurrency_gate::waiting() const {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(
      std::count_if(waiters_.begin(), waiters_.end(), [](const auto& w) { return !w->done(); }));
}

}  // namespace troupe
