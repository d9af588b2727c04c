#pragma once
// The SQL of every store operation. Writes run on the writer's session (its connection and its
// cache of journal heads) inside a transaction (and a savepoint) that the writer opens; they throw
// to refuse. Reads run on the reader's connection.

#include <troupe/persistence/records.hpp>

#include "persistence/group_commit/task.hpp"
#include "persistence/sqlite/sqlite_connection.hpp"
#include "persistence/sqlite/sqlite_heads.hpp"

#include <optional>
#include <string>
#include <vector>

namespace troupe::persistence::sqlite {

/// The schema version this code writes (PRAGMA user_version).
inline constexpr int schema_version = 2;

/// Creates the tables when missing, moves a version 1 journal to the current layout, and refuses
/// a file with a newer schema.
void create_schema(connection& c);

/// What a write runs on: the writer's connection and its cache of journal heads.
struct write_session {
  connection& db;
  journal_heads& heads;
};

// -- writes ------------------------------------------------------------------
// Contract the group commit relies on: a write refuses (errc::sequence_conflict, epoch_fenced,
// revision_conflict) only before it changes anything. Any other failure may come after a change,
// and makes the worker redo the group with one savepoint per write.
sequence_nr append(write_session& s, const append_request& r);
void delete_to(write_session& s, const delete_events_request& r);
void save_snapshot(write_session& s, const snapshot_write& w);
void delete_snapshots(write_session& s, const snapshot_delete& d);
revision_nr upsert_state(write_session& s, const state_write& w);
void delete_state(write_session& s, const state_delete& d);
void update_remembered(write_session& s, const remember_update& u);
/// Raises a shard's owner fence (scope 'o' of the fences table) unless a newer one holds it.
fence_raise raise_shard_fence(write_session& s, const shard_fence_raise& r);

/// Appends a run of requests: the checks in memory against the cached heads, in request order,
/// then the events of the accepted ones with INSERTs of many rows each. Refusals are outcomes;
/// any other failure is thrown (and the writer redoes the group with savepoints).
std::vector<group_commit::run_outcome> append_run(
    write_session& s, const std::vector<const append_request*>& requests);

// -- reads -------------------------------------------------------------------
std::vector<event_record> read_events(connection& c, const read_request& r);
sequence_nr highest_sequence_nr(connection& c, const std::string& persistence_id);
std::optional<snapshot_record> load_snapshot(connection& c, const snapshot_query& q);
std::optional<durable_state_record> get_state(connection& c, const std::string& persistence_id);
std::vector<std::string> list_remembered(connection& c, const remember_query& q);
std::vector<std::uint32_t> list_remembered_shards(connection& c, const std::string& type_name);

}  // namespace troupe::persistence::sqlite
