#pragma once
// The SQL of every store operation, as functions of a transaction. Writes run inside the writer's
// transaction (and, when a group is redone, a savepoint per write); they throw to refuse. Reads
// run on a reader's connection outside any explicit transaction.
//
// Every write first locks its fence row (`fences` for a persistence id, `shard_fences` for a
// shard's remembered entities) with an upsert, so writers for one id serialize on that row, across
// processes too, and then read the fence and the journal's highest sequence number under the lock.

#include <troupe/persistence/records.hpp>

#include <pqxx/connection>
#include <pqxx/transaction_base>

#include <optional>
#include <string>
#include <vector>

namespace troupe::persistence::pg {

/// The schema version this code writes (table schema_version).
inline constexpr int schema_version = 1;

/// Creates the schema and its tables when missing (idempotent, safe when several processes start
/// together); refuses a schema written by a newer version.
void create_schema(pqxx::connection& c, const std::string& schema);

/// Registers the prepared statements on a fresh connection.
void prepare_statements(pqxx::connection& c);

// -- writes ------------------------------------------------------------------
// Contract the group commit relies on: a write refuses (errc::sequence_conflict, epoch_fenced,
// revision_conflict) only after successful statements and before it changes anything, so the
// transaction stays usable. Any SQL error aborts the transaction, and the worker redoes the group
// with one savepoint per write.
sequence_nr append(pqxx::transaction_base& t, const append_request& r);
void delete_to(pqxx::transaction_base& t, const delete_events_request& r);
void save_snapshot(pqxx::transaction_base& t, const snapshot_write& w);
void delete_snapshots(pqxx::transaction_base& t, const snapshot_delete& d);
revision_nr upsert_state(pqxx::transaction_base& t, const state_write& w);
void delete_state(pqxx::transaction_base& t, const state_delete& d);
void update_remembered(pqxx::transaction_base& t, const remember_update& u);

/// The outcome of one append of a group: the last sequence number, or the refusal.
struct append_outcome {
  sequence_nr last = 0;
  std::exception_ptr refusal;
};

/// Appends many requests in one go: one statement locks and reads every id's fence and highest,
/// the checks run in memory in request order, the events of the accepted requests go in with one
/// COPY, and one statement updates the fences. Refusals leave the transaction usable; an SQL error
/// is thrown.
std::vector<append_outcome> append_many(pqxx::transaction_base& t,
                                        const std::vector<const append_request*>& requests);

// -- reads -------------------------------------------------------------------
std::vector<event_record> read_events(pqxx::transaction_base& t, const read_request& r);
sequence_nr highest_sequence_nr(pqxx::transaction_base& t, const std::string& persistence_id);
std::optional<snapshot_record> load_snapshot(pqxx::transaction_base& t, const snapshot_query& q);
std::optional<durable_state_record> get_state(pqxx::transaction_base& t,
                                              const std::string& persistence_id);
std::vector<std::string> list_remembered(pqxx::transaction_base& t, const remember_query& q);

}  // namespace troupe::persistence::pg
