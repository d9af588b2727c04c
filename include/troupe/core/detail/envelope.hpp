#pragma once
/// Messages in flight: a user message travels in an `envelope`, runtime signals in a
/// `system_message`. Both are intrusive queue nodes, allocated once per send.

#include <troupe/core/detail/mpsc_queue.hpp>
#include <troupe/core/detail/ref_counted.hpp>

#include <cstdint>
#include <string>
#include <typeinfo>
#include <utility>
#include <variant>

namespace troupe::detail {

class actor_target;

/// Readable name of a type ("account_command::deposit").
std::string type_name(const std::type_info& type);

/// Readable name of a payload: the active alternative when it is a std::variant.
template <class T>
std::string describe_payload(const T& value) {
  if constexpr (requires {
                  value.index();
                  std::variant_size<T>::value;
                }) {
    return std::visit([](const auto& alt) { return type_name(typeid(alt)); }, value);
  } else {
    return type_name(typeid(T));
  }
}

enum class envelope_kind : std::uint8_t {
  user,         // payload is the recipient's message type
  poison_pill,  // no payload; stops the recipient when dequeued
  timer,        // payload plus a timer key and generation, checked when dequeued
  idle,         // receive timeout: not counted as activity
};

/// Key and generation of a timer message, checked when it is dequeued.
struct timer_info {
  const std::string* key;
  std::uint64_t generation;
};

/// A user message on its way: payload, optional sender, kind.
struct envelope_base : mpsc_node {
  intrusive_ptr<actor_target> sender;
  envelope_kind kind = envelope_kind::user;

  envelope_base() = default;
  envelope_base(const envelope_base&) = delete;
  envelope_base& operator=(const envelope_base&) = delete;
  virtual ~envelope_base() = default;

  /// Type of the payload; typeid(void) for a poison pill.
  [[nodiscard]] virtual const std::type_info& type() const noexcept = 0;
  [[nodiscard]] virtual void* payload() noexcept = 0;
  [[nodiscard]] virtual timer_info timer() const noexcept { return {nullptr, 0}; }
  /// Readable type of the payload (the alternative for a variant).
  [[nodiscard]] virtual std::string describe() const { return type_name(type()); }
};

template <class T>
struct envelope final : envelope_base {
  T value;
  template <class... Args>
  explicit envelope(Args&&... args) : value(std::forward<Args>(args)...) {}
  [[nodiscard]] const std::type_info& type() const noexcept override { return typeid(T); }
  [[nodiscard]] void* payload() noexcept override { return &value; }
  [[nodiscard]] std::string describe() const override { return describe_payload(value); }
};

struct poison_envelope final : envelope_base {
  poison_envelope() { kind = envelope_kind::poison_pill; }
  [[nodiscard]] const std::type_info& type() const noexcept override { return typeid(void); }
  [[nodiscard]] void* payload() noexcept override { return nullptr; }
};

template <class T>
struct timer_envelope final : envelope_base {
  T value;
  std::string key;
  std::uint64_t generation;
  timer_envelope(T v, std::string k, std::uint64_t gen)
      : value(std::move(v)), key(std::move(k)), generation(gen) {
    kind = envelope_kind::timer;
  }
  [[nodiscard]] const std::type_info& type() const noexcept override { return typeid(T); }
  [[nodiscard]] void* payload() noexcept override { return &value; }
  [[nodiscard]] timer_info timer() const noexcept override { return {&key, generation}; }
};

class actor_cell;

/// A runtime signal (stop, watch, failure, coroutine resumption, ...). Handled before user
/// messages, inside the recipient's turn.
struct system_message {
  system_message* next = nullptr;
  system_message() = default;
  system_message(const system_message&) = delete;
  system_message& operator=(const system_message&) = delete;
  virtual ~system_message() = default;
  /// Runs inside the recipient cell's turn.
  virtual void apply(actor_cell& cell) = 0;
  /// Called instead of apply when the recipient is no actor cell or already dead.
  virtual void on_undelivered(actor_target& /*target*/) {}
};

}  // namespace troupe::detail
