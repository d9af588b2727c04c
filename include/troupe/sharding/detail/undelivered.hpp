#pragma once
/// INTERNAL. Turning a message that sharding cannot deliver into a dead letter where it lies:
/// a message whose copy or move constructor throws cannot be moved into a fresh envelope for
/// the dead-letter office, so the office gets the envelope that holds it, looking like an
/// envelope of the message itself.

#include <troupe/core/dead_letters.hpp>
#include <troupe/core/detail/envelope.hpp>
#include <troupe/core/errc.hpp>

#include <memory>
#include <new>
#include <string>
#include <system_error>
#include <typeinfo>
#include <utility>

namespace troupe::sharding::detail {

/// What the exception in flight says: its what(), or that it is not a std::exception.
std::string describe_current_exception();

/// The code of the exception in flight when it carries one (a troupe::error, such as the
/// cluster's node_unreachable for a send to a node that left), else `otherwise`.
std::error_code current_exception_code(errc otherwise) noexcept;

/// The reason for a message that could not be copied or moved, naming the exception in flight.
std::string copy_failure_reason();

/// Why a message could not be sent to `node`, from the exception in flight: its code (else
/// message_copy_failed) and "cannot send to node <node>: <what it says>".
struct send_failure {
  std::error_code code;
  std::string why;
};
send_failure current_send_failure(const std::string& node);

/// An envelope that shows the M held inside another envelope (which it owns) as its payload.
template <class M>
struct borrowed_envelope final : troupe::detail::envelope_base {
  borrowed_envelope(std::unique_ptr<troupe::detail::envelope_base> h, M* m)
      : holder(std::move(h)), message(m) {
    sender = std::move(holder->sender);
  }
  [[nodiscard]] const std::type_info& type() const noexcept override { return typeid(M); }
  [[nodiscard]] void* payload() noexcept override { return message; }
  [[nodiscard]] std::string describe() const override {
    return troupe::detail::describe_payload(*message);
  }

  std::unique_ptr<troupe::detail::envelope_base> holder;
  M* message;
};

/// Publishes `message`, which lives in `holder`, as a dead letter without moving it (failing its
/// asker at once). When `holder` is the message's own envelope it goes as it is.
template <class M>
void dead_letter_in_place(dead_letter_office& office,
                          std::unique_ptr<troupe::detail::envelope_base> holder, M& message,
                          std::string recipient, std::error_code code,
                          std::string reason) noexcept {
  troupe::detail::envelope_base* e = nullptr;
  if (holder->payload() == &message && holder->type() == typeid(M)) {
    e = holder.release();
  } else {
    try {
      e = new borrowed_envelope<M>(std::move(holder), &message);
    } catch (const std::bad_alloc&) {
      e = holder.release();  // out of memory: the holder goes as it is
    }
  }
  office.publish(e, std::move(recipient), code, std::move(reason));
}

template <class M>
void dead_letter_in_place(dead_letter_office& office,
                          std::unique_ptr<troupe::detail::envelope_base> holder, M& message,
                          std::string recipient, errc code, std::string reason) noexcept {
  dead_letter_in_place(office, std::move(holder), message, std::move(recipient),
                       make_error_code(code), std::move(reason));
}

}  // namespace troupe::sharding::detail
