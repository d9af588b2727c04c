#pragma once
/// Error codes of the actor core, one enum with a sentence per code (CAF's `sec`), and
/// troupe::error, the exception every layer throws (docs/errors.md lists every layer's codes).

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
  /// A message could not be routed to an entity: the entity-id extractor returned an empty id,
  /// is missing or threw, or the shard-id or entity-message extractor threw; also a sharding
  /// type that was not started. (A message of a type the region does not accept is a dead
  /// letter with bad_reply_type, like any message of the wrong type.)
  invalid_entity_id,
  /// A sharded entity could not be started: its constructor threw, or spawning it failed.
  entity_start_failed,
  /// The runtime could not pass a message on: its copy or move constructor threw, or memory ran
  /// out.
  message_copy_failed,
};

/// The enumerator's name ("mailbox_full"), for labels and logs; "unknown" for a value outside
/// the enum.
[[nodiscard]] const char* to_string(errc e) noexcept;

/// The `std::error_category` of troupe::errc.
const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

/// The exception every layer throws and every failed ask completes with: an error code plus a
/// message with the context. The code's category names the layer (troupe, troupe.persistence,
/// troupe.cluster): compare `code()` with any layer's errc, e.g.
/// `e.code() == troupe::persistence::errc::sequence_conflict`.
class error : public std::system_error {
 public:
  /// An error of the core.
  error(errc code, std::string what) : error(make_error_code(code), std::move(what)) {}
  /// An error of any layer; `code` carries that layer's category.
  error(std::error_code code, std::string what) : std::system_error(code), what_(std::move(what)) {}
  /// The core's code; errc{} (0, no code) when code() belongs to another layer.
  [[nodiscard]] errc value() const noexcept {
    return code().category() == error_category() ? static_cast<errc>(code().value()) : errc{};
  }
  [[nodiscard]] const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

}  // namespace troupe

template <>
struct std::is_error_code_enum<troupe::errc> : std::true_type {};
