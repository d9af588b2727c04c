#include "cluster/coordination/coordination_keys.hpp"

#include <troupe/cluster/errc.hpp>

#include "cluster/membership/key_text.hpp"
#include "cluster/membership/members.hpp"

#include <stdexcept>
#include <utility>

namespace troupe::cluster {

namespace coord = sharding::coordination;
using key_text::hex;
using key_text::next_line;
using key_text::parse_hex;
using key_text::parse_incarnation;

void check_type_name(std::string_view type) {
  if (type.empty() || type.find_first_of("/#\n") != std::string_view::npos) {
    throw std::invalid_argument(
        "coordination: a type name must be non-empty, without '/', '#' or "
        "newline");
  }
}

std::string coord_prefix(std::string_view cluster, std::string_view type) {
  return cluster_prefix(cluster) + "/coord/" + std::string(type) + "/";
}

std::string coord_key(std::string_view cluster, std::string_view type, lease_id lease) {
  return coord_prefix(cluster, type) + hex(lease);
}

std::string regions_prefix(std::string_view cluster, std::string_view type) {
  return cluster_prefix(cluster) + "/regions/" + std::string(type) + "/";
}

std::string region_key(std::string_view cluster, std::string_view type,
                       const coord::member_id& id) {
  return regions_prefix(cluster, type) + id.node + "#" + hex(id.incarnation);
}

std::string encode_region(const coord::region_info& region) {
  return region.proxy ? "proxy=true\n" : "proxy=false\n";
}

std::optional<coord::region_info> decode_region(std::string_view cluster, std::string_view type,
                                                std::string_view key, std::string_view value) {
  auto id = region_id_of(cluster, type, key);
  if (!id) return std::nullopt;
  coord::region_info region{std::move(*id), false};
  bool has_proxy = false;
  while (!value.empty()) {
    const std::string_view line = next_line(value);
    if (line == "proxy=true" || line == "proxy=false") {
      region.proxy = line == "proxy=true";
      has_proxy = true;
    }
    // Other fields are skipped: a later version may add some.
  }
  if (!has_proxy) return std::nullopt;
  return region;
}

std::optional<coord::member_id> region_id_of(std::string_view cluster, std::string_view type,
                                             std::string_view key) {
  const std::string prefix = regions_prefix(cluster, type);
  if (!key.starts_with(prefix)) return std::nullopt;
  return parse_incarnation(key.substr(prefix.size()));
}

std::optional<coord::member_id> member_id_of(std::string_view cluster, std::string_view key) {
  const std::string prefix = members_prefix(cluster);
  if (!key.starts_with(prefix)) return std::nullopt;
  return parse_incarnation(key.substr(prefix.size()));
}

void register_region(consensus_store& store, std::string_view cluster, std::string_view type,
                     const coord::region_info& region,
                     std::function<void(std::error_code, revision)> done) {
  check_type_name(type);
  if (region.id.incarnation <= 0 || region.id.node.empty() ||
      region.id.node.find_first_of("#\n") != std::string::npos) {
    throw std::invalid_argument("region: needs a node id without '#' and the node's lease");
  }
  std::string key = region_key(cluster, type, region.id);
  txn_request t;
  t.compares.push_back(compare::missing(key));
  t.success.emplace_back(put_op{std::move(key), encode_region(region), region.id.incarnation});
  store.txn(std::move(t), [done = std::move(done)](std::error_code ec, txn_result r) {
    if (!ec && !r.succeeded) ec = make_error_code(errc::invalid_store_request);
    done(ec, ec ? 0 : r.header_revision);
  });
}

std::string alloc_prefix(std::string_view cluster, std::string_view type) {
  return cluster_prefix(cluster) + "/alloc/" + std::string(type) + "/";
}

std::string alloc_key(std::string_view cluster, std::string_view type, sharding::shard_id shard) {
  return alloc_prefix(cluster, type) + std::to_string(shard);
}

std::string encode_owner(const coord::member_id& owner) {
  return "node=" + owner.node + "\nincarnation=" + hex(owner.incarnation) + "\n";
}

std::optional<sharding::shard_id> shard_of_alloc_key(std::string_view cluster,
                                                     std::string_view type, std::string_view key) {
  return key_text::shard_after(alloc_prefix(cluster, type), key);
}

std::optional<coord::allocation> decode_allocation(std::string_view cluster, std::string_view type,
                                                   const key_value& kv) {
  auto shard = shard_of_alloc_key(cluster, type, kv.key);
  if (!shard) return std::nullopt;
  coord::allocation a;
  a.shard = *shard;
  a.mod_revision = kv.mod_revision;
  std::string_view rest = kv.value;
  while (!rest.empty()) {
    const std::string_view line = next_line(rest);
    if (line.starts_with("node=")) {
      a.owner.node = std::string(line.substr(5));
    } else if (line.starts_with("incarnation=")) {
      auto inc = parse_hex(line.substr(12));
      if (!inc) return std::nullopt;
      a.owner.incarnation = *inc;
    }
  }
  if (a.owner.node.empty() || a.owner.incarnation == 0) return std::nullopt;
  return a;
}

txn_request allocation_txn(std::string_view cluster, std::string_view type,
                           std::string_view own_coord_key, const coord::write_allocations& write) {
  txn_request t;
  // Whatever this node believes, the write applies only while its election key is the one it
  // won with: a deposed coordinator's key is gone, so this compare fails.
  t.compares.push_back(compare::create_revision_is(std::string(own_coord_key),
                                                   write.coordinator_key_create_revision));
  for (const auto& s : write.shards) {
    std::string key = alloc_key(cluster, type, s.shard);
    // Create-if-absent, or a move from exactly the epoch the decision saw.
    t.compares.push_back(s.expected_mod_revision == 0
                             ? compare::missing(key)
                             : compare::mod_revision_is(key, s.expected_mod_revision));
    t.success.emplace_back(put_op{std::move(key), encode_owner(s.owner), 0});
  }
  if (write.dead_owner) {
    // Only a deleted member key proves the owner fenced itself.
    t.compares.push_back(compare::missing(
        member_key(cluster, write.dead_owner->node, write.dead_owner->incarnation)));
  }
  return t;
}

}  // namespace troupe::cluster
