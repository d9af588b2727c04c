#pragma once
/// The SQLite plugin (target troupe::persistence_sqlite), the embedded default store: the four
/// stores in one database file in WAL mode.
///
/// One writer thread owns the write connection and does group commit: the writes that queue up
/// while a transaction commits all go into the next transaction (a write refused by a check
/// changes nothing, and a group in which a write fails otherwise is redone with one savepoint per
/// write, so one bad write never undoes the others), and every caller is completed only after the
/// transaction holding its write committed. Reads run on a second thread with its own connection,
/// beside the writer (WAL lets readers and the writer proceed together). No store call ever blocks
/// the calling thread.

#include <troupe/persistence/plugin.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>

namespace troupe {
class metrics_registry;
}  // namespace troupe

namespace troupe::persistence {

/// How much a commit waits for the disk.
enum class sqlite_durability {
  /// `PRAGMA synchronous=FULL`: every commit is fsynced before it is acknowledged, so an
  /// acknowledged write survives a process crash and a power loss. The default.
  full,
  /// `PRAGMA synchronous=NORMAL`: in WAL mode, fsync only at checkpoints. An acknowledged write
  /// survives a process crash but the last commits can be lost on a power loss or OS crash.
  normal,
};

/// Settings of the SQLite plugin.
struct sqlite_options {
  /// The database file, created with its schema when missing.
  std::filesystem::path file;
  sqlite_durability durability = sqlite_durability::full;
  /// The most writes one transaction takes; more queued writes go into the next one.
  std::size_t max_batch = 4096;
  /// The most writes waiting for the writer (at least 1); one more fails at once with
  /// errc::overloaded instead of queueing without bound.
  std::size_t max_queued = 65536;
  /// How long a statement waits for a lock held by another process on the same file.
  std::chrono::milliseconds busy_timeout{5000};
  /// Where the writer records `troupe_persistence_write_seconds` and
  /// `troupe_persistence_group_size` (labelled store="sqlite"); null records nothing.
  std::shared_ptr<metrics_registry> metrics{};
};

/// Opens (or creates) the database and starts the writer and reader threads. Throws
/// persistence_error(errc::store_failure) when the file cannot be opened or was written by a
/// newer schema. Destroying the plugin finishes the writes already queued, then joins its threads.
[[nodiscard]] std::unique_ptr<plugin> open_sqlite_plugin(sqlite_options options);

}  // namespace troupe::persistence
