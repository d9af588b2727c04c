#pragma once
// The writer's cache of journal heads: per persistence id, its number in the journal, the highest
// sequence number and the epoch fence. With it an append checks its sequence number and epoch
// without a read, and writes only its events: the hot path of every persistent entity.
//
// The cache is the writer connection's view, including the open transaction's own writes. It is
// only valid while no other connection writes the file and while the transaction commits: the
// writer clears it when `PRAGMA data_version` shows another connection's commit, and after any
// rollback (of the group, or of one write's savepoint).

#include <troupe/persistence/records.hpp>

#include "persistence/sqlite/sqlite_connection.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

namespace troupe::persistence::sqlite {

/// What the writer knows of one persistence id's journal.
struct journal_head {
  /// The id's number (persistence_ids.id, journal.pid_id); 0 when it has none yet.
  std::int64_t number = 0;
  /// The highest sequence number ever written (deleted events included).
  sequence_nr highest = 0;
  /// The highest epoch written for the id.
  ownership_epoch fence = 0;
};

/// The heads the writer has read or written, up to a bound.
class journal_heads {
 public:
  /// At most this many ids are kept after a commit; past it the cache starts again empty (a
  /// miss costs a read).
  static constexpr std::size_t max_entries = std::size_t{1} << 18;

  /// The id's head, read from the database on a miss (inside the open transaction).
  journal_head& get(connection& c, const std::string& persistence_id);
  /// Drops one id (after a write that changed its fence or deleted events).
  void forget(const std::string& persistence_id) { heads_.erase(persistence_id); }
  /// Drops everything (after a rollback, or another connection's commit).
  void clear() noexcept { heads_.clear(); }
  /// After a commit: starts again empty when the cache has grown past max_entries. Never during
  /// a transaction, whose writes hold references to their heads and rely on them.
  void trim() noexcept {
    if (heads_.size() > max_entries) heads_.clear();
  }

  /// Clears the cache when another connection has committed since the last call; call it at the
  /// start of each transaction, after taking the write lock.
  void check_data_version(connection& c);

 private:
  std::unordered_map<std::string, journal_head> heads_;
  std::int64_t data_version_ = -1;
};

}  // namespace troupe::persistence::sqlite
