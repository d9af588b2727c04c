#pragma once
/// What an actor_ref points at: a local actor cell, an ask's promise, a test probe, and later
/// a proxy for an actor on another node. Refs never know which.

#include <troupe/core/detail/envelope.hpp>
#include <troupe/core/detail/ref_counted.hpp>

#include <functional>
#include <string>
#include <system_error>

namespace troupe::detail {

class system_impl;

class actor_target : public ref_counted {
 public:
  /// Delivers a message of the target's own message type. Any thread; never blocks or throws;
  /// a message that cannot be delivered goes to dead letters.
  virtual void enqueue(envelope_base* e) noexcept = 0;
  /// Delivers a message whose type is checked (and converted, e.g. into a variant) first; used
  /// for replies, whose type only the recipient knows.
  virtual void enqueue_any(envelope_base* e) noexcept = 0;
  /// Like enqueue, but reports a full bounded mailbox or a dead target instead of dropping.
  virtual std::error_code try_enqueue(envelope_base* e) noexcept {
    enqueue(e);
    return {};
  }
  /// Enqueues, or when a bounded mailbox with the suspend policy is full, waits for room;
  /// `done` runs once with the outcome, on any thread.
  virtual void enqueue_or_wait(envelope_base* e,
                               std::function<void(std::error_code)> done) noexcept {
    done(try_enqueue(e));
  }
  /// Told when a message this target sent could not be delivered (asks fail at once on it).
  virtual void notify_undelivered(std::error_code /*code*/,
                                  const std::string& /*reason*/) noexcept {}
  /// Delivers a runtime signal.
  virtual void send_system(system_message* m) noexcept = 0;
  /// The target's path, e.g. /user/bank/account-7.
  [[nodiscard]] virtual std::string path() const = 0;
  /// The runtime the target lives in; it stays allocated as long as any of its targets.
  [[nodiscard]] virtual system_impl* owner() const noexcept = 0;
  /// True once the target will never handle another message.
  [[nodiscard]] virtual bool is_terminated() const noexcept = 0;
};

}  // namespace troupe::detail
