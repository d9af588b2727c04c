#pragma once
/// Error codes of the actor core, one enum with a sentence per code (CAF's `sec`).

#include <string>
#include <system_error>

namespace troupe {

/// Why an operation of the runtime failed.
enum class errc {
  /// An ask got no reply before its timeout expired.
  ask_timeout = 1,
  /// The recipient is stopped, or stopped before it handled the message.
  recipient_terminated,
  /// A bounded mailbox was full and its overflow policy rejected the message.
  mailbox_full,
  /// An actor name starts with '$', is "." or "..", or has a character outside [A-Za-z0-9_-.@:+~].
  invalid_actor_name,
  /// A sibling with the same name is alive (or still stopping).
  actor_name_taken,
  /// A reply was sent while handling a message that carried no sender.
  no_sender,
  /// A reply's type is not what the asker waits for.
  bad_reply_type,
  /// The actor system is shutting down or has terminated.
  system_terminated,
  /// The stash reached its capacity.
  stash_overflow,
  /// The recipient failed while handling the message.
  actor_failed,
  /// A configuration value is invalid.
  invalid_config,
  /// The operation is allowed only inside an actor's turn.
  not_in_actor,
  /// The actor is not a sharded entity (it has no entity identity).
  not_an_entity,
  /// A message could not be routed to an entity: empty id, a throwing extractor, unknown type.
  invalid_entity_id,
  /// A sharded entity could not be started: its constructor threw, or spawning it failed.
  entity_start_failed,
  /// The runtime could not pass a message on: its copy or move constructor threw, or memory ran
  /// out.
  message_copy_failed,
};

/// The `std::error_category` of troupe::errc.
const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

/// The exception the runtime throws: an error code plus a message with the context.
class error : public std::system_error {
 public:
  error(errc code, std::string what)
      : std::system_error(make_error_code(code)), what_(std::move(what)) {}
  [[nodiscard]] errc value() const noexcept { return static_cast<errc>(code().value()); }
  [[nodiscard]] const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

}  // namespace troupe

template <>
struct std::is_error_code_enum<troupe::errc> : std::true_type {};
