#include "troupe/core/dead_letters.hpp"

#include "troupe/core/actor.hpp"

#include <algorithm>
#include <chrono>

namespace troupe {

namespace {
// At most this many dead letters are logged per second; the rest are counted and summarized.
constexpr std::uint32_t log_lines_per_second = 10;
}  // namespace

void dead_letter_office::subscribe(actor_ref<dead_letter> subscriber) {
  std::lock_guard lock(mutex_);
  subscribers_.push_back(std::move(subscriber));
}

void dead_letter_office::unsubscribe(const untyped_ref& subscriber) {
  std::lock_guard lock(mutex_);
  std::erase_if(subscribers_, [&](const auto& s) { return s == subscriber; });
}

void dead_letter_office::unsubscribe_all() noexcept {
  std::vector<actor_ref<dead_letter>> dropped;  // released outside the lock
  std::lock_guard lock(mutex_);
  dropped.swap(subscribers_);
}

std::vector<std::pair<std::error_code, std::uint64_t>> dead_letter_office::count_by_code() const {
  std::lock_guard lock(mutex_);
  return by_code_;
}

void dead_letter_office::publish(detail::envelope_base* e, std::string recipient,
                                 std::error_code code, std::string reason) noexcept {
  total_.fetch_add(1, std::memory_order_relaxed);
  try {
    {
      std::lock_guard lock(mutex_);
      auto it = std::find_if(by_code_.begin(), by_code_.end(),
                             [&](const auto& c) { return c.first == code; });
      if (it == by_code_.end()) {
        by_code_.emplace_back(code, 1);
      } else {
        ++it->second;
      }
    }
    std::shared_ptr<detail::envelope_base> owned(e);
    if (owned->sender) owned->sender->notify_undelivered(code, reason);
    dead_letter d;
    d.recipient = std::move(recipient);
    d.reason = std::move(reason);
    d.code = code;
    d.sender = untyped_ref(owned->sender);
    d.type = &owned->type();
    d.message_type = owned->kind == detail::envelope_kind::poison_pill
                         ? std::string("troupe::poison_pill")
                         : owned->describe();
    d.message = std::shared_ptr<void>(owned, owned->payload());
    log_rate_limited(d);
    // A dead letter about a dead letter is counted and logged, never re-published (no loops).
    if (*d.type == typeid(dead_letter)) return;
    std::vector<actor_ref<dead_letter>> subscribers;
    {
      std::lock_guard lock(mutex_);
      subscribers = subscribers_;
    }
    for (const auto& s : subscribers) {
      if (!s.is_terminated()) s.tell(d);
    }
  } catch (...) {
    // Out of memory while reporting: the count above is all we can keep.
  }
}

void dead_letter_office::log_rate_limited(const dead_letter& d) noexcept {
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  std::uint64_t suppressed = 0;
  bool log = false;
  {
    std::lock_guard lock(mutex_);
    if (now_ms - window_start_ms_ >= 1000) {
      suppressed = suppressed_;
      suppressed_ = 0;
      window_start_ms_ = now_ms;
      logged_in_window_ = 0;
    }
    if (logged_in_window_ < log_lines_per_second) {
      ++logged_in_window_;
      log = true;
    } else {
      ++suppressed_;
    }
  }
  auto& logger = detail::runtime_logger();
  if (suppressed > 0) {
    logger.info("dead letters: {} more not logged in the last second ({} in total)", suppressed,
                count());
  }
  if (log) {
    logger.info("dead letter: {} to {} from {}: {}", d.message_type, d.recipient,
                d.sender ? d.sender.path() : std::string("no sender"), d.reason);
  }
}

}  // namespace troupe
