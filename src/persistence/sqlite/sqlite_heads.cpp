#include "persistence/sqlite/sqlite_heads.hpp"

#include <algorithm>
#include <limits>

namespace troupe::persistence::sqlite {

namespace {

constexpr std::uint64_t max_int = std::numeric_limits<std::int64_t>::max();

journal_head read_head(connection& c, const std::string& persistence_id) {
  journal_head h;
  {
    auto s = c.prepare(
        "SELECT (SELECT id FROM persistence_ids WHERE pid = ?1),"
        "       (SELECT epoch FROM fences WHERE scope = 'p' AND key = ?1),"
        "       (SELECT highest FROM journal_floors WHERE pid = ?1)");
    s.bind(1, persistence_id);
    s.step();
    h.number = static_cast<std::int64_t>(s.unsigned_or_zero(0, "persistence id number", max_int));
    h.fence = s.unsigned_or_zero(1, "fence epoch", max_int);
    h.highest = s.unsigned_or_zero(2, "deleted highest sequence number", max_int);
  }
  if (h.number != 0) {
    auto s = c.prepare("SELECT max(seq) FROM journal WHERE pid_id = ?1");
    s.bind(1, h.number);
    s.step();
    h.highest = std::max(h.highest, s.unsigned_or_zero(0, "event sequence number", max_int));
  }
  return h;
}

}  // namespace

journal_head& journal_heads::get(connection& c, const std::string& persistence_id) {
  if (auto it = heads_.find(persistence_id); it != heads_.end()) return it->second;
  auto h = read_head(c, persistence_id);  // throws on a corrupt row: nothing is cached then
  return heads_.emplace(persistence_id, h).first->second;
}

void journal_heads::check_data_version(connection& c) {
  auto s = c.prepare("PRAGMA data_version");
  s.step();
  auto version = s.integer(0, "data version");
  if (version != data_version_) {
    heads_.clear();
    data_version_ = version;
  }
}

}  // namespace troupe::persistence::sqlite
