#include "persistence/postgres/pg_operations.hpp"
#include "persistence/postgres/pg_values.hpp"

#include <pqxx/result>

namespace troupe::persistence::pg {

namespace {

[[noreturn]] void corrupt(const char* what, const std::string& why) {
  throw persistence_error(errc::corrupt_record,
                          std::string("corrupt stored record: ") + what + " " + why);
}

}  // namespace

// -- values ------------------------------------------------------------------

std::string text_array(const std::vector<std::string>& items) {
  std::string out = "{";
  for (const auto& item : items) {
    if (out.size() > 1) out += ',';
    out += '"';
    for (char c : item) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + '}';
}

std::string bigint_array(const std::vector<long long>& items) {
  std::string out = "{";
  for (auto v : items) {
    if (out.size() > 1) out += ',';
    out += std::to_string(v);
  }
  return out + '}';
}

std::string bytea_hex(const bytes& b) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out = "\\x";
  out.reserve(2 + 2 * b.size());
  for (auto byte : b) {
    auto v = std::to_integer<unsigned>(byte);
    out += digits[v >> 4];
    out += digits[v & 15];
  }
  return out;
}

std::uint64_t number(const pqxx::field& f, const char* what, std::uint64_t min, std::uint64_t max) {
  if (f.is_null()) corrupt(what, "is NULL");
  long long v = 0;
  if (!f.to(v)) corrupt(what, "is not a number");
  if (v < 0 || static_cast<std::uint64_t>(v) < min || static_cast<std::uint64_t>(v) > max) {
    corrupt(what, "is out of range: " + std::to_string(v));
  }
  return static_cast<std::uint64_t>(v);
}

serialized read_serialized(const pqxx::row& r, int first) {
  serialized out;
  const auto& name = r[first];
  if (name.is_null() || name.size() == 0) corrupt("manifest type name", "is empty");
  out.manifest.type_name = name.c_str();
  out.manifest.version = static_cast<std::uint32_t>(
      number(r[first + 1], "manifest version", 1, std::numeric_limits<std::uint32_t>::max()));
  const auto& payload = r[first + 2];
  if (payload.is_null()) corrupt("payload", "is NULL");
  pqxx::binarystring b(payload);
  const auto* p = reinterpret_cast<const std::byte*>(b.data());
  out.payload.assign(p, p + b.size());
  return out;
}

// -- reads -------------------------------------------------------------------

std::vector<event_record> read_events(pqxx::transaction_base& t, const read_request& r) {
  std::vector<event_record> out;
  if (r.from > r.to || r.max_count == 0) return out;
  auto rows = t.exec_prepared("read_events", r.persistence_id, clamp(r.from), clamp(r.to),
                              clamp(r.max_count));
  out.reserve(rows.size());
  for (const auto& row : rows) {
    event_record e;
    e.sequence = number(row[0], "event sequence number", 1);
    e.event = read_serialized(row, 1);
    e.epoch = number(row[4], "event epoch");
    out.push_back(std::move(e));
  }
  return out;
}

sequence_nr highest_sequence_nr(pqxx::transaction_base& t, const std::string& persistence_id) {
  auto rows = t.exec_prepared("highest", persistence_id);
  return rows.empty() ? 0 : number(rows[0][0], "highest sequence number");
}

std::optional<snapshot_record> load_snapshot(pqxx::transaction_base& t, const snapshot_query& q) {
  auto rows = t.exec_prepared("load_snapshot", q.persistence_id, clamp(q.max_sequence));
  if (rows.empty()) return std::nullopt;
  snapshot_record out;
  out.sequence = number(rows[0][0], "snapshot sequence number");
  out.state = read_serialized(rows[0], 1);
  out.epoch = number(rows[0][4], "snapshot epoch");
  return out;
}

std::optional<durable_state_record> get_state(pqxx::transaction_base& t,
                                              const std::string& persistence_id) {
  auto rows = t.exec_prepared("get_state", persistence_id);
  if (rows.empty()) return std::nullopt;
  durable_state_record out;
  out.revision = number(rows[0][0], "state revision", 1);
  out.value = read_serialized(rows[0], 1);
  out.epoch = number(rows[0][4], "state epoch");
  return out;
}

std::vector<std::string> list_remembered(pqxx::transaction_base& t, const remember_query& q) {
  auto rows = t.exec_prepared("list_remembered", q.type_name, static_cast<long long>(q.shard));
  std::vector<std::string> out;
  out.reserve(rows.size());
  for (const auto& row : rows) out.emplace_back(row[0].c_str(), row[0].size());
  return out;
}

std::vector<std::uint32_t> list_remembered_shards(pqxx::transaction_base& t,
                                                  const std::string& type_name) {
  auto rows = t.exec_prepared("list_remembered_shards", type_name);
  std::vector<std::uint32_t> out;
  out.reserve(rows.size());
  for (const auto& row : rows)
    out.push_back(static_cast<std::uint32_t>(
        number(row[0], "shard", 0, std::numeric_limits<std::uint32_t>::max())));
  return out;
}

}  // namespace troupe::persistence::pg
