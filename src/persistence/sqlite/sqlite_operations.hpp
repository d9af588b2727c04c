#pragma once
// The SQL of every store operation, as functions of a connection. Writes run on the writer's
// connection inside a transaction (and a savepoint) that the worker opens; they throw to refuse.
// Reads run on the reader's connection.

#include <troupe/persistence/records.hpp>

#include "persistence/sqlite/sqlite_connection.hpp"

#include <optional>
#include <string>
#include <vector>

namespace troupe::persistence::sqlite {

/// The schema version this code writes (PRAGMA user_version).
inline constexpr int schema_version = 1;

/// Creates the tables when missing; refuses a file with a newer schema.
void create_schema(connection& c);

// -- writes ------------------------------------------------------------------
// Contract the group commit relies on: a write refuses (errc::sequence_conflict, epoch_fenced,
// revision_conflict) only before it changes anything. Any other failure may come after a change,
// and makes the worker redo the group with one savepoint per write.
sequence_nr append(connection& c, const append_request& r);
void delete_to(connection& c, const delete_events_request& r);
void save_snapshot(connection& c, const snapshot_write& w);
void delete_snapshots(connection& c, const snapshot_delete& d);
revision_nr upsert_state(connection& c, const state_write& w);
void delete_state(connection& c, const state_delete& d);
void update_remembered(connection& c, const remember_update& u);

// -- reads -------------------------------------------------------------------
std::vector<event_record> read_events(connection& c, const read_request& r);
sequence_nr highest_sequence_nr(connection& c, const std::string& persistence_id);
std::optional<snapshot_record> load_snapshot(connection& c, const snapshot_query& q);
std::optional<durable_state_record> get_state(connection& c, const std::string& persistence_id);
std::vector<std::string> list_remembered(connection& c, const remember_query& q);

}  // namespace troupe::persistence::sqlite
