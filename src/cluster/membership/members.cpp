#include "cluster/membership/members.hpp"

#include <troupe/cluster/errc.hpp>

#include "cluster/membership/key_text.hpp"

#include <boost/asio/post.hpp>

#include <stdexcept>
#include <utility>

namespace troupe::cluster {

namespace coord = sharding::coordination;
using key_text::hex;
using key_text::next_line;

namespace {

bool clean(std::string_view s) {
  return !s.empty() && s.find('#') == std::string_view::npos &&
         s.find('\n') == std::string_view::npos;
}

void check(const member_record& m) {
  if (!clean(m.info.id.node)) {
    throw std::invalid_argument("member: the node id must be non-empty, without '#' or newline");
  }
  if (m.info.id.incarnation <= 0) {
    throw std::invalid_argument("member: the incarnation must be the node's lease");
  }
  for (const auto& role : m.info.roles) {
    if (!clean(role)) throw std::invalid_argument("member: a role must be non-empty, without '#'");
  }
  if (m.address.find('\n') != std::string::npos ||
      m.info.app_version.find('\n') != std::string::npos) {
    throw std::invalid_argument("member: address and version may not contain a newline");
  }
}

}  // namespace

std::string cluster_prefix(std::string_view cluster) { return "/troupe/" + std::string(cluster); }

std::string members_prefix(std::string_view cluster) {
  return cluster_prefix(cluster) + "/members/";
}

std::string member_key(std::string_view cluster, std::string_view node, lease_id lease) {
  return members_prefix(cluster) + std::string(node) + "#" + hex(lease);
}

// Fields by name, one per line, so a later version can add one that older nodes skip.
std::string encode_member(const member_record& m) {
  std::string v = "address=" + m.address + "\n";
  v += "state=" + std::string(m.info.leaving ? "leaving" : "up") + "\n";
  v += "roles=";
  for (std::size_t i = 0; i < m.info.roles.size(); ++i) {
    if (i != 0) v += ',';
    v += m.info.roles[i];
  }
  v += "\n";
  v += "version=" + m.info.app_version + "\n";
  return v;
}

std::optional<member_record> decode_member(std::string_view cluster, std::string_view key,
                                           std::string_view value) {
  const std::string prefix = members_prefix(cluster);
  if (!key.starts_with(prefix)) return std::nullopt;
  const std::string_view name = key.substr(prefix.size());
  auto id = key_text::parse_incarnation(name);
  if (!id) return std::nullopt;
  member_record m;
  m.info.id = std::move(*id);
  bool has_state = false;
  while (!value.empty()) {
    const std::string_view line = next_line(value);
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) {
      if (line.empty()) continue;
      return std::nullopt;
    }
    const std::string_view field = line.substr(0, eq);
    const std::string_view v = line.substr(eq + 1);
    if (field == "address") {
      m.address = std::string(v);
    } else if (field == "state") {
      if (v != "up" && v != "leaving") return std::nullopt;
      m.info.leaving = v == "leaving";
      has_state = true;
    } else if (field == "roles") {
      std::string_view rest = v;
      while (!rest.empty()) {
        const auto comma = rest.find(',');
        m.info.roles.emplace_back(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      }
    } else if (field == "version") {
      m.info.app_version = std::string(v);
    }
  }
  if (!has_state || m.address.empty()) return std::nullopt;
  return m;
}

void register_member(consensus_store& store, std::string_view cluster, const member_record& m,
                     std::function<void(std::error_code, revision)> done) {
  check(m);
  std::string key = member_key(cluster, m.info.id.node, m.info.id.incarnation);
  txn_request t;
  t.compares.push_back(compare::missing(key));
  t.success.emplace_back(put_op{std::move(key), encode_member(m), m.info.id.incarnation});
  store.txn(std::move(t), [done = std::move(done)](std::error_code ec, txn_result r) {
    if (!ec && !r.succeeded) ec = make_error_code(errc::invalid_store_request);
    done(ec, ec ? 0 : r.header_revision);
  });
}

void update_member(consensus_store& store, std::string_view cluster, const member_record& m,
                   std::function<void(std::error_code, revision)> done) {
  check(m);
  std::string key = member_key(cluster, m.info.id.node, m.info.id.incarnation);
  txn_request t;
  // Only while the key lives under this lease: never re-create a member that has gone.
  t.compares.push_back(
      {key, compare::target::lease, compare::relation::equal, m.info.id.incarnation, {}});
  t.success.emplace_back(put_op{std::move(key), encode_member(m), m.info.id.incarnation});
  store.txn(std::move(t), [done = std::move(done)](std::error_code ec, txn_result r) {
    if (!ec && !r.succeeded) ec = make_error_code(errc::lease_not_found);
    done(ec, ec ? 0 : r.header_revision);
  });
}

coord::coordinator_event to_coordinator_event(const member_change& change) {
  if (change.type == member_change::kind::left) {
    return coord::member_deleted{change.at, change.member.info.id};
  }
  return coord::member_put{change.at, change.member.info};
}

// -- members_view -----------------------------------------------------------------------------

std::shared_ptr<members_view> members_view::start(std::shared_ptr<consensus_store> store,
                                                  std::shared_ptr<troupe::clock> clock,
                                                  std::string cluster, change_callback on_change,
                                                  duration retry) {
  auto view = std::make_shared<members_view>(token{}, std::move(store), std::move(clock),
                                             std::move(cluster), std::move(on_change), retry);
  view->read();
  return view;
}

members_view::members_view(token, std::shared_ptr<consensus_store> store,
                           std::shared_ptr<troupe::clock> clock, std::string cluster,
                           change_callback on_change, duration retry)
    : store_(std::move(store)),
      clock_(std::move(clock)),
      cluster_(std::move(cluster)),
      on_change_(std::move(on_change)),
      retry_(retry) {}

members_view::~members_view() { stop(); }

std::vector<member_record> members_view::members() const {
  std::lock_guard lock(mutex_);
  std::vector<member_record> out;
  out.reserve(members_.size());
  for (const auto& [key, m] : members_) out.push_back(m);
  return out;
}

revision members_view::seen() const {
  std::lock_guard lock(mutex_);
  return seen_;
}

int members_view::reads() const {
  std::lock_guard lock(mutex_);
  return reads_;
}

void members_view::stop() {
  std::unique_ptr<watch_handle> w;
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    w = std::move(watch_);
    if (retry_timer_ != 0) clock_->cancel(retry_timer_);
    retry_timer_ = 0;
  }
  if (w) w->cancel();
}

void members_view::read() {
  std::weak_ptr<members_view> weak = weak_from_this();
  store_->range(key_range::prefix(members_prefix(cluster_)),
                [weak](std::error_code ec, range_result r) {
                  if (auto self = weak.lock()) self->on_read(ec, std::move(r));
                });
}

void members_view::retry_read() {
  std::weak_ptr<members_view> weak = weak_from_this();
  auto executor = store_->executor();
  std::lock_guard lock(mutex_);
  if (stopped_) return;
  retry_timer_ = clock_->schedule_after(retry_, [weak, executor] {
    boost::asio::post(executor, [weak] {
      if (auto self = weak.lock()) self->read();
    });
  });
}

void members_view::on_read(std::error_code ec, range_result r) {
  if (ec) {
    retry_read();
    return;
  }
  std::vector<member_change> changes;
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    retry_timer_ = 0;
    ++reads_;
    // Report the difference between what the view knew and the store at this revision: whatever
    // happened in between (a compacted gap, a lost watch) shows as changes at the read's revision.
    std::map<std::string, member_record> now;
    for (auto& kv : r.kvs) {
      if (auto m = decode_member(cluster_, kv.key, kv.value)) now.emplace(kv.key, std::move(*m));
    }
    for (const auto& [key, m] : members_) {
      if (!now.contains(key)) {
        changes.push_back({member_change::kind::left, r.header_revision, m});
      }
    }
    for (const auto& [key, m] : now) {
      auto old = members_.find(key);
      if (old == members_.end()) {
        changes.push_back({member_change::kind::joined, r.header_revision, m});
      } else if (!(old->second == m)) {
        changes.push_back({member_change::kind::changed, r.header_revision, m});
      }
    }
    members_ = std::move(now);
    seen_ = r.header_revision;
  }
  for (const auto& c : changes) on_change_(c);
  watch_from(r.header_revision + 1);
}

void members_view::watch_from(revision start) {
  std::weak_ptr<members_view> weak = weak_from_this();
  auto handle = store_->watch(key_range::prefix(members_prefix(cluster_)), start,
                              [weak](std::error_code ec, watch_batch b) {
                                if (auto self = weak.lock()) self->on_batch(ec, std::move(b));
                              });
  std::unique_ptr<watch_handle> old;
  {
    std::lock_guard lock(mutex_);
    if (stopped_) {
      old = std::move(handle);
    } else {
      old = std::move(watch_);
      watch_ = std::move(handle);
    }
  }
  if (old) old->cancel();
}

void members_view::on_batch(std::error_code ec, watch_batch b) {
  if (ec) {
    // errc::compacted or a lost connection: the watch has ended; read again and diff.
    {
      std::lock_guard lock(mutex_);
      if (stopped_) return;
    }
    read();
    return;
  }
  std::vector<member_change> changes;
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    for (auto& e : b.events) {
      const revision at = e.kv.mod_revision;
      if (at <= seen_) continue;  // already in the read this watch followed
      if (e.type == watch_event::kind::del) {
        auto it = members_.find(e.kv.key);
        if (it == members_.end()) continue;
        changes.push_back({member_change::kind::left, at, std::move(it->second)});
        members_.erase(it);
        continue;
      }
      auto m = decode_member(cluster_, e.kv.key, e.kv.value);
      if (!m) continue;
      auto [it, inserted] = members_.try_emplace(e.kv.key, *m);
      if (inserted) {
        changes.push_back({member_change::kind::joined, at, std::move(*m)});
      } else if (!(it->second == *m)) {
        it->second = *m;
        changes.push_back({member_change::kind::changed, at, std::move(*m)});
      }
    }
    if (b.header_revision > seen_) seen_ = b.header_revision;
  }
  for (const auto& c : changes) on_change_(c);
}

}  // namespace troupe::cluster
