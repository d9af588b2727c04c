#include "cluster/coordination/handoff_keys.hpp"

#include "cluster/coordination/coordination_keys.hpp"
#include "cluster/membership/key_text.hpp"
#include "cluster/membership/members.hpp"

#include <utility>

namespace troupe::cluster {

namespace coord = sharding::coordination;
using key_text::hex;
using key_text::next_line;
using key_text::parse_decimal;
using key_text::parse_incarnation;
using key_text::shard_after;

namespace {

std::string incarnation_text(const coord::member_id& m) {
  return m.node + "#" + hex(m.incarnation);
}

}  // namespace

std::string handoff_prefix(std::string_view cluster, std::string_view type) {
  return cluster_prefix(cluster) + "/handoff/" + std::string(type) + "/";
}

std::string handoff_key(std::string_view cluster, std::string_view type, sharding::shard_id shard) {
  return handoff_prefix(cluster, type) + std::to_string(shard);
}

std::string stopped_prefix(std::string_view cluster, std::string_view type) {
  return cluster_prefix(cluster) + "/stopped/" + std::string(type) + "/";
}

std::string stopped_key(std::string_view cluster, std::string_view type, sharding::shard_id shard) {
  return stopped_prefix(cluster, type) + std::to_string(shard);
}

std::string encode_handoff(const coord::handoff& h) {
  return "from=" + incarnation_text(h.from) + "\nto=" + incarnation_text(h.to) +
         "\nepoch=" + std::to_string(h.from_epoch) + "\n";
}

std::optional<coord::handoff> decode_handoff(std::string_view cluster, std::string_view type,
                                             const key_value& kv) {
  auto shard = shard_after(handoff_prefix(cluster, type), kv.key);
  if (!shard) return std::nullopt;
  coord::handoff h;
  h.shard = *shard;
  h.revision = kv.mod_revision;
  bool from = false;
  bool to = false;
  std::string_view rest = kv.value;
  while (!rest.empty()) {
    const std::string_view line = next_line(rest);
    if (line.starts_with("from=")) {
      auto m = parse_incarnation(line.substr(5));
      if (!m) return std::nullopt;
      h.from = std::move(*m);
      from = true;
    } else if (line.starts_with("to=")) {
      auto m = parse_incarnation(line.substr(3));
      if (!m) return std::nullopt;
      h.to = std::move(*m);
      to = true;
    } else if (line.starts_with("epoch=")) {
      auto e = parse_decimal<coord::store_revision>(line.substr(6));
      if (!e) return std::nullopt;
      h.from_epoch = *e;
    }
  }
  if (!from || !to || h.from_epoch <= 0) return std::nullopt;
  return h;
}

std::optional<sharding::shard_id> shard_of_handoff_key(std::string_view cluster,
                                                       std::string_view type,
                                                       std::string_view key) {
  return shard_after(handoff_prefix(cluster, type), key);
}

std::optional<coord::shard_stopped> decode_stopped(std::string_view cluster, std::string_view type,
                                                   const key_value& kv) {
  auto shard = shard_after(stopped_prefix(cluster, type), kv.key);
  if (!shard) return std::nullopt;
  std::string_view rest = kv.value;
  while (!rest.empty()) {
    const std::string_view line = next_line(rest);
    if (line.starts_with("handoff=")) {
      auto h = parse_decimal<coord::store_revision>(line.substr(8));
      if (!h || *h <= 0) return std::nullopt;
      return coord::shard_stopped{kv.mod_revision, *shard, *h};
    }
  }
  return std::nullopt;
}

txn_request begin_handoffs_txn(std::string_view cluster, std::string_view type,
                               std::string_view own_coord_key, lease_id coordinator_lease,
                               const coord::begin_handoffs& begin) {
  txn_request t;
  t.compares.push_back(compare::create_revision_is(std::string(own_coord_key),
                                                   begin.coordinator_key_create_revision));
  for (const auto& s : begin.shards) {
    // From exactly the epoch the decision saw, and no other hand-off of the shard under way.
    t.compares.push_back(
        compare::mod_revision_is(alloc_key(cluster, type, s.shard), s.expected_mod_revision));
    std::string key = handoff_key(cluster, type, s.shard);
    t.compares.push_back(compare::missing(key));
    // Under the coordinator's lease: a hand-off whose coordinator is gone ends by itself, and
    // the shard stays where it is.
    t.success.emplace_back(put_op{std::move(key),
                                  encode_handoff({s.shard, s.from, s.to, s.expected_mod_revision}),
                                  coordinator_lease});
  }
  return t;
}

txn_request commit_handoff_txn(std::string_view cluster, std::string_view type,
                               std::string_view own_coord_key,
                               const coord::commit_handoff& commit) {
  txn_request t;
  std::string alloc = alloc_key(cluster, type, commit.shard);
  std::string handoff = handoff_key(cluster, type, commit.shard);
  t.compares.push_back(compare::create_revision_is(std::string(own_coord_key),
                                                   commit.coordinator_key_create_revision));
  t.compares.push_back(compare::mod_revision_is(alloc, commit.expected_mod_revision));
  // The hand-off the old owner answered, not an aborted one or a later one.
  t.compares.push_back(compare::mod_revision_is(handoff, commit.handoff_revision));
  t.success.emplace_back(put_op{std::move(alloc), encode_owner(commit.to), 0});
  t.success.emplace_back(delete_op{key_range::single(std::move(handoff))});
  t.success.emplace_back(delete_op{key_range::single(stopped_key(cluster, type, commit.shard))});
  return t;
}

txn_request abort_handoff_txn(std::string_view cluster, std::string_view type,
                              std::string_view own_coord_key, const coord::abort_handoff& abort) {
  txn_request t;
  std::string handoff = handoff_key(cluster, type, abort.shard);
  t.compares.push_back(compare::create_revision_is(std::string(own_coord_key),
                                                   abort.coordinator_key_create_revision));
  t.compares.push_back(compare::mod_revision_is(handoff, abort.handoff_revision));
  t.success.emplace_back(delete_op{key_range::single(std::move(handoff))});
  t.success.emplace_back(delete_op{key_range::single(stopped_key(cluster, type, abort.shard))});
  return t;
}

txn_request report_stopped_txn(std::string_view cluster, std::string_view type,
                               sharding::shard_id shard, coord::store_revision handoff_revision,
                               lease_id owner_lease) {
  txn_request t;
  t.compares.push_back(
      compare::mod_revision_is(handoff_key(cluster, type, shard), handoff_revision));
  t.success.emplace_back(put_op{stopped_key(cluster, type, shard),
                                "handoff=" + std::to_string(handoff_revision) + "\n", owner_lease});
  return t;
}

}  // namespace troupe::cluster
