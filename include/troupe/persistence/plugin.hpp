#pragma once
/// A storage plugin: the four stores over one backend (one in-memory map, one SQLite file...).

#include <troupe/persistence/durable_state_store.hpp>
#include <troupe/persistence/journal.hpp>
#include <troupe/persistence/records.hpp>
#include <troupe/persistence/remember_entities_store.hpp>
#include <troupe/persistence/snapshot_store.hpp>

namespace troupe::persistence {

/// One backend's journal, snapshot store, durable state store and remember-entities store.
/// Destroying a plugin fails its pending operations with errc::store_closed or finishes them.
/// A completion handler without an executor of its own (a plain callback) may run on a store
/// thread: it must be quick and must not throw.
class plugin {
 public:
  virtual ~plugin() = default;

  [[nodiscard]] virtual persistence::journal& journal() = 0;
  [[nodiscard]] virtual snapshot_store& snapshots() = 0;
  [[nodiscard]] virtual durable_state_store& durable_state() = 0;
  [[nodiscard]] virtual remember_entities_store& remember_entities() = 0;

  /// Writes and transactions so far (group commit shows as fewer transactions than writes).
  [[nodiscard]] virtual write_stats stats() const = 0;
};

}  // namespace troupe::persistence
