#include "persistence/sqlite/sqlite_operations.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace troupe::persistence::sqlite {

namespace {

constexpr std::uint64_t max_int = std::numeric_limits<std::int64_t>::max();
constexpr std::uint64_t max_version = std::numeric_limits<std::uint32_t>::max();

std::int64_t clamp(std::uint64_t v) { return static_cast<std::int64_t>(std::min(v, max_int)); }

/// Columns type_name, version, payload starting at `first`.
serialized read_serialized(const statement& s, int first) {
  serialized out;
  out.manifest.type_name = s.text(first, "manifest type name");
  if (out.manifest.type_name.empty()) {
    throw persistence_error(errc::corrupt_record,
                            "corrupt stored record: empty manifest type name");
  }
  out.manifest.version =
      static_cast<std::uint32_t>(s.unsigned_integer(first + 1, "manifest version", 1, max_version));
  out.payload = s.blob(first + 2, "payload");
  return out;
}

}  // namespace

std::vector<event_record> read_events(connection& c, const read_request& r) {
  std::vector<event_record> out;
  if (r.from > r.to || r.max_count == 0) return out;
  auto s = c.prepare(
      "SELECT seq, type_name, version, payload, epoch FROM journal "
      "WHERE pid_id = (SELECT id FROM persistence_ids WHERE pid = ?1) "
      "AND seq >= ?2 AND seq <= ?3 ORDER BY seq LIMIT ?4");
  s.bind(1, r.persistence_id)
      .bind(2, clamp(r.from))
      .bind(3, clamp(r.to))
      .bind(4, clamp(r.max_count));
  while (s.step()) {
    event_record e;
    e.sequence = s.unsigned_integer(0, "event sequence number", 1, max_int);
    e.event = read_serialized(s, 1);
    e.epoch = s.unsigned_integer(4, "event epoch", 0, max_int);
    out.push_back(std::move(e));
  }
  return out;
}

sequence_nr highest_sequence_nr(connection& c, const std::string& persistence_id) {
  // The last event's number, or, when events were deleted, the highest recorded at the delete.
  auto s = c.prepare(
      "SELECT (SELECT max(seq) FROM journal "
      "        WHERE pid_id = (SELECT id FROM persistence_ids WHERE pid = ?1)),"
      "       (SELECT highest FROM journal_floors WHERE pid = ?1)");
  s.bind(1, persistence_id);
  s.step();
  return std::max(s.unsigned_or_zero(0, "event sequence number", max_int),
                  s.unsigned_or_zero(1, "deleted highest sequence number", max_int));
}

std::optional<snapshot_record> load_snapshot(connection& c, const snapshot_query& q) {
  auto s = c.prepare(
      "SELECT seq, type_name, version, payload, epoch FROM snapshots "
      "WHERE pid = ?1 AND seq <= ?2 ORDER BY seq DESC LIMIT 1");
  s.bind(1, q.persistence_id).bind(2, clamp(q.max_sequence));
  if (!s.step()) return std::nullopt;
  snapshot_record out;
  out.sequence = s.unsigned_integer(0, "snapshot sequence number", 0, max_int);
  out.state = read_serialized(s, 1);
  out.epoch = s.unsigned_integer(4, "snapshot epoch", 0, max_int);
  return out;
}

std::optional<durable_state_record> get_state(connection& c, const std::string& persistence_id) {
  auto s = c.prepare(
      "SELECT revision, type_name, version, payload, epoch FROM durable_state WHERE pid = ?1");
  s.bind(1, persistence_id);
  if (!s.step()) return std::nullopt;
  durable_state_record out;
  out.revision = s.unsigned_integer(0, "state revision", 1, max_int);
  out.value = read_serialized(s, 1);
  out.epoch = s.unsigned_integer(4, "state epoch", 0, max_int);
  return out;
}

std::vector<std::string> list_remembered(connection& c, const remember_query& q) {
  auto s = c.prepare(
      "SELECT entity_id FROM remembered WHERE type_name = ?1 AND shard = ?2 ORDER BY entity_id");
  s.bind(1, q.type_name).bind(2, std::int64_t{q.shard});
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0, "entity id"));
  return out;
}

std::vector<std::uint32_t> list_remembered_shards(connection& c, const std::string& type_name) {
  auto s = c.prepare("SELECT DISTINCT shard FROM remembered WHERE type_name = ?1 ORDER BY shard");
  s.bind(1, type_name);
  std::vector<std::uint32_t> out;
  while (s.step()) {
    out.push_back(static_cast<std::uint32_t>(s.unsigned_integer(0, "shard", 0, UINT32_MAX)));
  }
  return out;
}

}  // namespace troupe::persistence::sqlite
