#pragma once
// The SQL of every store operation. Writes run on the writer's session (the open transaction, or
// a savepoint when a group is redone, and the cache of heads) and throw to refuse; reads run on a
// reader's connection outside any explicit transaction. How writers in several processes stay
// correct without locking a row per id is explained in pg_heads.hpp.

#include <troupe/persistence/records.hpp>

#include "persistence/group_commit/task.hpp"
#include "persistence/postgres/pg_heads.hpp"

#include <pqxx/connection>
#include <pqxx/transaction_base>

#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace troupe::persistence::pg {

/// The schema version this code writes (table schema_version).
inline constexpr int schema_version = 2;

/// Creates the schema and its tables when missing (idempotent, safe when several processes start
/// together), moves a version 1 schema to the current one, and refuses a schema written by a
/// newer version.
void create_schema(pqxx::connection& c, const std::string& schema);

/// Registers the prepared statements on a fresh connection.
void prepare_statements(pqxx::connection& c);

/// What a write runs on.
struct write_session {
  pqxx::transaction_base& t;
  pid_heads& heads;
};

// -- writes, one at a time -----------------------------------------------------
// Contract the group commit relies on: a write refuses (errc::sequence_conflict, epoch_fenced,
// revision_conflict) only after successful statements and before it changes anything, so the
// transaction stays usable. Any SQL error aborts the transaction, and the worker redoes the group
// with one savepoint per write. A write updates the cached heads only once all its statements
// succeeded. `append` alone runs only inside a savepoint: it turns a duplicate key (another
// process took the number) into errc::sequence_conflict after the statement failed.
sequence_nr append(write_session& s, const append_request& r);
void delete_to(write_session& s, const delete_events_request& r);
void save_snapshot(write_session& s, const snapshot_write& w);
void delete_snapshots(write_session& s, const snapshot_delete& d);
revision_nr upsert_state(write_session& s, const state_write& w);
void delete_state(write_session& s, const state_delete& d);
void update_remembered(write_session& s, const remember_update& u);
/// Raises a shard's owner fence unless a newer one holds it (INSERT ... ON CONFLICT DO UPDATE
/// ... WHERE epoch < $e RETURNING).
fence_raise raise_shard_fence(write_session& s, const shard_fence_raise& r);
/// Refuses (errc::epoch_fenced) a write naming a shard whose fence is not at `epoch`. It reads the
/// fence FOR SHARE, so no raise commits before the write's transaction does; call it before the
/// write changes anything.
void check_owner_fence(pqxx::transaction_base& t, const std::optional<fenced_shard>& shard,
                       ownership_epoch epoch);

// -- writes, many in one go ------------------------------------------------------

using group_commit::run_outcome;

/// Appends a run of requests: the checks in memory against the cached heads, in request order;
/// the events of the accepted requests in one COPY (one INSERT for a single request); the raised
/// fences in one statement. Refusals leave the transaction usable; an SQL error is thrown.
std::vector<run_outcome> append_run(write_session& s,
                                    const std::vector<const append_request*>& requests);

/// Upserts a run of durable states of distinct ids: the fence checks in memory; one UPDATE for
/// the ids expecting a stored revision and one INSERT for those expecting none, each writing only
/// where the stored revision is the expected one; the raised fences in one statement.
std::vector<run_outcome> upsert_run(write_session& s,
                                    const std::vector<const state_write*>& writes);

// -- reads ---------------------------------------------------------------------
std::vector<event_record> read_events(pqxx::transaction_base& t, const read_request& r);
sequence_nr highest_sequence_nr(pqxx::transaction_base& t, const std::string& persistence_id);
std::optional<snapshot_record> load_snapshot(pqxx::transaction_base& t, const snapshot_query& q);
std::optional<durable_state_record> get_state(pqxx::transaction_base& t,
                                              const std::string& persistence_id);
std::vector<std::string> list_remembered(pqxx::transaction_base& t, const remember_query& q);
std::vector<std::uint32_t> list_remembered_shards(pqxx::transaction_base& t,
                                                  const std::string& type_name);

}  // namespace troupe::persistence::pg
