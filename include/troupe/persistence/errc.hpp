#pragma once
/// Error codes of the persistence layer (codecs and stores), one enum with a sentence per code,
/// and the exception that carries one of them with the context (persistence id, byte offset...).

#include <troupe/core/errc.hpp>

#include <string>
#include <system_error>

namespace troupe::persistence {

/// Why a codec or a store operation failed.
enum class errc {
  /// Bytes could not be decoded: truncated, an out-of-range value, a bad tag or trailing bytes.
  decode_error = 1,
  /// No codec is registered for a manifest (type name and version), or for a type to encode.
  unknown_manifest,
  /// An append's expected sequence number is not the journal's next one for that id: another
  /// writer appended first.
  sequence_conflict,
  /// A durable state write's expected revision is not the stored revision.
  revision_conflict,
  /// The write's epoch is lower than the highest epoch the store has seen for that id, or the
  /// write names a shard whose fence is not at the write's epoch: the writer is a stale owner.
  epoch_fenced,
  /// A stored row violates the store's format (wrong column type, empty manifest, bad number).
  corrupt_record,
  /// A request is malformed: empty persistence id, no events, sequence number 0.
  invalid_request,
  /// The backend failed (I/O error, disk full, SQLite error).
  store_failure,
  /// The store was closed before the operation ran.
  store_closed,
  /// The store's queue of waiting operations was full (its `max_queued`): the operation was
  /// refused without running; nothing else is affected, and it may be retried once the store has
  /// caught up.
  overloaded,
};

/// The `std::error_category` of troupe::persistence::errc.
const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

/// The exception the persistence layer throws (and hands to completion handlers): a
/// troupe::error, so `catch (const troupe::error&)` catches it with every other layer's.
class persistence_error : public troupe::error {
 public:
  persistence_error(errc code, std::string what)
      : troupe::error(make_error_code(code), std::move(what)) {}
  /// The persistence code (hides troupe::error::value, which names only core codes).
  [[nodiscard]] errc value() const noexcept { return static_cast<errc>(code().value()); }
};

}  // namespace troupe::persistence

template <>
struct std::is_error_code_enum<troupe::persistence::errc> : std::true_type {};
