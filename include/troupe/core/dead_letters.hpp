#pragma once
/// Messages that could not be delivered: to a stopped or unknown actor, over a full mailbox,
/// unroutable. None is lost silently: each is counted, logged at a rate limit, and published to
/// subscribers; an ask whose question became a dead letter fails at once.

#include <troupe/core/actor_ref.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <typeinfo>
#include <utility>
#include <vector>

namespace troupe {

/// One undelivered message.
struct dead_letter {
  /// Path of the intended recipient.
  std::string recipient;
  /// Why it was not delivered ("recipient terminated", "mailbox full", ...).
  std::string reason;
  std::error_code code;
  /// The sender, if the message had one.
  untyped_ref sender;
  /// Readable type of the message.
  std::string message_type;
  /// The message itself, kept alive for subscribers.
  std::shared_ptr<void> message;
  const std::type_info* type = nullptr;

  /// The message as T, or null when it is of another type.
  template <class T>
  [[nodiscard]] const T* message_as() const noexcept {
    return type != nullptr && *type == typeid(T) ? static_cast<const T*>(message.get()) : nullptr;
  }
};

/// The system's dead-letter stream.
class dead_letter_office {
 public:
  dead_letter_office() = default;
  dead_letter_office(const dead_letter_office&) = delete;
  dead_letter_office& operator=(const dead_letter_office&) = delete;

  /// Every dead letter from now on is also sent to `subscriber`.
  void subscribe(actor_ref<dead_letter> subscriber);
  void unsubscribe(const untyped_ref& subscriber);
  /// INTERNAL: drops every subscription when the system is destroyed (a subscribed actor holds
  /// the runtime alive through its parents, and the runtime holds the subscriber: a cycle).
  void unsubscribe_all() noexcept;

  /// Dead letters so far.
  [[nodiscard]] std::uint64_t count() const noexcept {
    return total_.load(std::memory_order_relaxed);
  }

  /// Dead letters so far by the code they were published with (their reason), in the order
  /// each code first came. Counted under a lock: publishing is not a hot path.
  [[nodiscard]] std::vector<std::pair<std::error_code, std::uint64_t>> count_by_code() const;

  /// INTERNAL: takes ownership of `e`; notifies its sender (failing an ask).
  void publish(detail::envelope_base* e, std::string recipient, std::error_code code,
               std::string reason) noexcept;

 private:
  void log_rate_limited(const dead_letter& d) noexcept;

  std::atomic<std::uint64_t> total_{0};
  mutable std::mutex mutex_;
  std::vector<std::pair<std::error_code, std::uint64_t>> by_code_;  // few codes: a list
  std::vector<actor_ref<dead_letter>> subscribers_;
  std::int64_t window_start_ms_ = 0;
  std::uint32_t logged_in_window_ = 0;
  std::uint64_t suppressed_ = 0;
};

namespace detail {
class system_impl;
/// The dead-letter office of the runtime a target lives in (see actor_target::owner()).
dead_letter_office& dead_letters_of(system_impl& system) noexcept;
}  // namespace detail

}  // namespace troupe
