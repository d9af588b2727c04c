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
  auto version = v[0][0].is_null() ? 0 : v[0][0].as<long long>();
  if (version > schema_version) {
    throw persistence_error(errc::store_failure, "PostgreSQL schema " + schema + " has version " +
                                                     std::to_string(version) +
                                                     ", newer than this troupe's");
  }
  // pid and entity ids compare bytewise (COLLATE "C"): the order does not depend on the locale.
  t.exec(
      // Per persistence id: the fence (highest epoch written) and the floor: the journal's highest
      // sequence number when events were last deleted, so that numbers are never reused (the
      // highest is the larger of the floor and the journal's last number). A row exists once a
      // fence was raised or events were deleted. Version 1 kept every append's highest here: a
      // valid floor too.
      "CREATE TABLE IF NOT EXISTS fences("
      "  pid text COLLATE \"C\" PRIMARY KEY,"
      "  epoch bigint NOT NULL DEFAULT 0,"
      "  highest bigint NOT NULL DEFAULT 0);"
      // One row, whose number every change of a fence or a floor bumps: every write transaction
      // locks it, shared or (to change fences) exclusive. See pg_heads.hpp.
      "CREATE TABLE IF NOT EXISTS fence_generation(n bigint NOT NULL);"
      "INSERT INTO fence_generation(n) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM fence_generation);"
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
  if (version < schema_version) {
    t.exec("INSERT INTO schema_version(version) VALUES (" + std::to_string(schema_version) + ")");
  }
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
  // -- fences (see pg_heads.hpp)
  p.prepare("lock_generation_shared", "SELECT n FROM fence_generation FOR SHARE");
  p.prepare("lock_generation_exclusive", "SELECT n FROM fence_generation FOR UPDATE");
  p.prepare("bump_generation", "UPDATE fence_generation SET n = n + 1");
  // Per id: fence and floor, and (where wanted) the journal's last number.
  p.prepare("load_heads",
            "SELECT u.pid, f.epoch, f.highest, u.want, CASE WHEN u.want THEN "
            "(SELECT j.seq FROM journal j WHERE j.pid = u.pid ORDER BY j.seq DESC LIMIT 1) END "
            "FROM unnest($1::text[], $2::boolean[]) AS u(pid, want) "
            "LEFT JOIN fences f ON f.pid = u.pid");
  p.prepare("journal_highest", "SELECT coalesce(max(seq), 0) FROM journal WHERE pid = $1");
  p.prepare("raise_fence",
            "INSERT INTO fences(pid, epoch) VALUES ($1, $2) "
            "ON CONFLICT (pid) DO UPDATE SET epoch = excluded.epoch");
  p.prepare("raise_fences",
            "INSERT INTO fences(pid, epoch) SELECT * FROM unnest($1::text[], $2::bigint[]) "
            "ON CONFLICT (pid) DO UPDATE SET epoch = excluded.epoch");
  p.prepare("set_floor",
            "INSERT INTO fences(pid, highest) VALUES ($1, $2) "
            "ON CONFLICT (pid) DO UPDATE SET highest = excluded.highest");
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
  p.prepare("highest",
            "SELECT greatest(coalesce((SELECT highest FROM fences WHERE pid = $1), 0), "
            "coalesce((SELECT max(seq) FROM journal WHERE pid = $1), 0))");
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
  // -- durable state: each write checks the revision as it writes, and returns the ids it wrote
  p.prepare("state_revision", "SELECT revision FROM durable_state WHERE pid = $1");
  p.prepare("state_revisions",
            "SELECT pid, revision FROM durable_state WHERE pid = ANY($1::text[])");
  p.prepare("insert_state",
            "INSERT INTO durable_state(pid, revision, type_name, version, payload, epoch) "
            "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (pid) DO NOTHING RETURNING pid");
  p.prepare("update_state",
            "UPDATE durable_state SET revision = $3, type_name = $4, version = $5, "
            "payload = $6, epoch = $7 WHERE pid = $1 AND revision = $2 RETURNING pid");
  p.prepare("insert_states",
            "INSERT INTO durable_state(pid, revision, type_name, version, payload, epoch) "
            "SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], "
            "$5::bytea[], $6::bigint[]) ON CONFLICT (pid) DO NOTHING RETURNING pid");
  p.prepare("update_states",
            "UPDATE durable_state d SET revision = u.next, type_name = u.type_name, "
            "version = u.version, payload = u.payload, epoch = u.epoch "
            "FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::bigint[], "
            "$6::bytea[], $7::bigint[]) AS u(pid, expected, next, type_name, version, payload, "
            "epoch) WHERE d.pid = u.pid AND d.revision = u.expected RETURNING d.pid");
  p.prepare("delete_state",
            "DELETE FROM durable_state WHERE pid = $1 AND revision = $2 RETURNING pid");
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
