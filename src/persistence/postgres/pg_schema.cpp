// The plugin's tables and prepared statements.
#include <troupe/persistence/errc.hpp>

#include "persistence/postgres/pg_operations.hpp"
#include "persistence/postgres/pg_session.hpp"

#include <pqxx/transaction>

#include <string>

namespace troupe::persistence::pg {

void create_schema(pqxx::connection& c, const std::string& schema) {
  auto s = quote_identifier(schema);
  pqxx::work t(c);
  // CREATE ... IF NOT EXISTS is not safe against a concurrent CREATE of the same table: several
  // processes starting together take turns on this lock.
  t.exec("SELECT pg_advisory_xact_lock(hashtext(" + t.quote("troupe schema " + schema) + "))");
  t.exec("CREATE SCHEMA IF NOT EXISTS " + s);
  t.exec("SET LOCAL search_path = " + s);
  t.exec("CREATE TABLE IF NOT EXISTS schema_version(version integer NOT NULL)");
  auto v = t.exec("SELECT max(version) FROM schema_version");
  if (!v[0][0].is_null()) {
    auto version = v[0][0].as<long long>();
    if (version > schema_version) {
      throw persistence_error(errc::store_failure, "PostgreSQL schema " + schema + " has version " +
                                                       std::to_string(version) +
                                                       ", newer than this troupe's");
    }
  } else {
    t.exec("INSERT INTO schema_version(version) VALUES (" + std::to_string(schema_version) + ")");
  }
  // pid and entity ids compare bytewise (COLLATE "C"): the order does not depend on the locale.
  t.exec(
      // Per persistence id: the fence (highest epoch written) and the journal's highest sequence
      // number, which outlives deleted events so that numbers are never reused. Every write locks
      // this row first.
      "CREATE TABLE IF NOT EXISTS fences("
      "  pid text COLLATE \"C\" PRIMARY KEY,"
      "  epoch bigint NOT NULL DEFAULT 0,"
      "  highest bigint NOT NULL DEFAULT 0);"
      "CREATE TABLE IF NOT EXISTS journal("
      "  pid text COLLATE \"C\" NOT NULL, seq bigint NOT NULL, type_name text NOT NULL,"
      "  version bigint NOT NULL, payload bytea NOT NULL, epoch bigint NOT NULL,"
      "  PRIMARY KEY(pid, seq));"
      "CREATE TABLE IF NOT EXISTS snapshots("
      "  pid text COLLATE \"C\" NOT NULL, seq bigint NOT NULL, type_name text NOT NULL,"
      "  version bigint NOT NULL, payload bytea NOT NULL, epoch bigint NOT NULL,"
      "  PRIMARY KEY(pid, seq));"
      "CREATE TABLE IF NOT EXISTS durable_state("
      "  pid text COLLATE \"C\" PRIMARY KEY, revision bigint NOT NULL, type_name text NOT NULL,"
      "  version bigint NOT NULL, payload bytea NOT NULL, epoch bigint NOT NULL);"
      // Per (entity type, shard): the fence of the remember-entities store.
      "CREATE TABLE IF NOT EXISTS shard_fences("
      "  type_name text COLLATE \"C\" NOT NULL, shard bigint NOT NULL,"
      "  epoch bigint NOT NULL DEFAULT 0, PRIMARY KEY(type_name, shard));"
      "CREATE TABLE IF NOT EXISTS remembered_entities("
      "  type_name text COLLATE \"C\" NOT NULL, shard bigint NOT NULL,"
      "  entity_id text COLLATE \"C\" NOT NULL, PRIMARY KEY(type_name, shard, entity_id));");
  t.commit();
}

void prepare_statements(pqxx::connection& c) {
  // Prepared now rather than at first use: libpqxx 6.4 leaks a result when a lazy PREPARE meets
  // a connection the server dropped, and a failure here is a failure to connect, retried later.
  struct prepare_now {
    pqxx::connection& c;
    void prepare(const char* name, const char* sql) const {
      c.prepare(name, sql);
      c.prepare_now(name);
    }
  } p{c};
  // -- fences
  p.prepare("lock_pid",
            "INSERT INTO fences(pid) VALUES ($1) "
            "ON CONFLICT (pid) DO UPDATE SET epoch = fences.epoch RETURNING epoch, highest");
  p.prepare("lock_pids",
            "INSERT INTO fences(pid) SELECT p FROM unnest($1::text[]) AS p ORDER BY p "
            "ON CONFLICT (pid) DO UPDATE SET epoch = fences.epoch RETURNING pid, epoch, highest");
  // Existing rows are locked without writing a new row version (the upsert above writes one).
  p.prepare("lock_existing_pids",
            "SELECT pid, epoch, highest FROM fences WHERE pid = ANY($1::text[]) ORDER BY pid "
            "FOR UPDATE");
  p.prepare("set_fence", "UPDATE fences SET epoch = $2, highest = $3 WHERE pid = $1");
  p.prepare("set_fences",
            "UPDATE fences SET epoch = u.epoch, highest = u.highest "
            "FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS u(pid, epoch, highest) "
            "WHERE fences.pid = u.pid");
  p.prepare("lock_shard",
            "INSERT INTO shard_fences(type_name, shard) VALUES ($1, $2) "
            "ON CONFLICT (type_name, shard) DO UPDATE SET epoch = shard_fences.epoch "
            "RETURNING epoch");
  p.prepare("set_shard_fence",
            "UPDATE shard_fences SET epoch = $3 WHERE type_name = $1 AND shard = $2");
  // -- journal
  p.prepare("insert_event",
            "INSERT INTO journal(pid, seq, type_name, version, payload, epoch) "
            "VALUES ($1, $2, $3, $4, $5, $6)");
  p.prepare("delete_events", "DELETE FROM journal WHERE pid = $1 AND seq <= $2");
  p.prepare("read_events",
            "SELECT seq, type_name, version, payload, epoch FROM journal "
            "WHERE pid = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq LIMIT $4");
  p.prepare("highest", "SELECT highest FROM fences WHERE pid = $1");
  // -- snapshots
  p.prepare("save_snapshot",
            "INSERT INTO snapshots(pid, seq, type_name, version, payload, epoch) "
            "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (pid, seq) DO UPDATE SET "
            "type_name = excluded.type_name, version = excluded.version, "
            "payload = excluded.payload, epoch = excluded.epoch");
  p.prepare("delete_snapshots", "DELETE FROM snapshots WHERE pid = $1 AND seq <= $2");
  p.prepare("load_snapshot",
            "SELECT seq, type_name, version, payload, epoch FROM snapshots "
            "WHERE pid = $1 AND seq <= $2 ORDER BY seq DESC LIMIT 1");
  // -- durable state
  p.prepare("state_revision", "SELECT revision FROM durable_state WHERE pid = $1");
  p.prepare("upsert_state",
            "INSERT INTO durable_state(pid, revision, type_name, version, payload, epoch) "
            "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (pid) DO UPDATE SET "
            "revision = excluded.revision, type_name = excluded.type_name, "
            "version = excluded.version, payload = excluded.payload, epoch = excluded.epoch");
  p.prepare("delete_state", "DELETE FROM durable_state WHERE pid = $1");
  p.prepare("get_state",
            "SELECT revision, type_name, version, payload, epoch FROM durable_state "
            "WHERE pid = $1");
  // -- remembered entities
  p.prepare("remember_add",
            "INSERT INTO remembered_entities(type_name, shard, entity_id) "
            "SELECT $1, $2, unnest($3::text[]) ON CONFLICT DO NOTHING");
  p.prepare("remember_remove",
            "DELETE FROM remembered_entities "
            "WHERE type_name = $1 AND shard = $2 AND entity_id = ANY($3::text[])");
  p.prepare("list_remembered",
            "SELECT entity_id FROM remembered_entities WHERE type_name = $1 AND shard = $2 "
            "ORDER BY entity_id");
}

}  // namespace troupe::persistence::pg
