#pragma once
/// The PostgreSQL plugin (target troupe::persistence_postgres), the store several nodes share: the
/// four stores in tables of one schema of a PostgreSQL 15 database, through libpqxx.
///
/// One writer thread owns the write connection and does group commit: the writes that queue up
/// while a transaction commits all go into the next transaction (runs of appends become one COPY),
/// and every caller is completed only after the transaction holding its write committed. Reads run
/// on a small pool of reader threads, each with its own connection. A connection the server drops
/// is opened again for the next operation. No store call ever blocks the calling thread.

#include <troupe/persistence/plugin.hpp>

#include <cstddef>
#include <memory>
#include <string>

namespace troupe {
class metrics_registry;
}  // namespace troupe

namespace troupe::persistence {

/// Settings of the PostgreSQL plugin.
struct postgres_options {
  /// A libpq connection string or URL, e.g. `postgresql://user@127.0.0.1:5432/db`.
  std::string url;
  /// The schema holding the plugin's tables, created with them when missing.
  std::string schema = "troupe";
  /// Reader threads, each with its own connection (at least 1).
  std::size_t readers = 2;
  /// The most writes one transaction takes; more queued writes go into the next one.
  std::size_t max_batch = 4096;
  /// The most writes waiting for the writer (at least 1); one more fails at once with
  /// errc::overloaded instead of queueing without bound.
  std::size_t max_queued = 65536;
  /// Shown in `pg_stat_activity.application_name` for the plugin's connections.
  std::string application_name = "troupe";
  /// Where the writer records `troupe_persistence_write_seconds` and
  /// `troupe_persistence_group_size` (labelled store="postgres"); null records nothing.
  std::shared_ptr<metrics_registry> metrics{};
};

/// Connects (writer and readers), creates the schema and its tables when missing, and starts the
/// threads. Throws persistence_error(errc::store_failure) when the server cannot be reached or
/// refuses the connection (the message names the server, never the password), or
/// errc::invalid_request for an empty URL or schema. Destroying the plugin finishes the writes
/// already queued, then joins its threads.
[[nodiscard]] std::unique_ptr<plugin> open_postgres_plugin(postgres_options options);

}  // namespace troupe::persistence
