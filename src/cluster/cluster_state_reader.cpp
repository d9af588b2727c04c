#include "cluster/cluster_state_reader.hpp"

#include "cluster/coordination/coordination_keys.hpp"
#include "cluster/membership/members.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace troupe::cluster {

namespace coord = sharding::coordination;

const char* to_string(reachability r) noexcept {
  switch (r) {
    case reachability::self:
      return "self";
    case reachability::connected:
      return "connected";
    case reachability::not_connected:
      return "not connected";
    case reachability::unreachable:
      return "unreachable";
  }
  return "unknown";
}

namespace {

/// Splits `P/<kind>/<type>/...` into kind and type; false for a key of another shape.
bool kind_and_type(std::string_view key, std::string_view prefix, std::string_view& kind,
                   std::string_view& type) {
  if (!key.starts_with(prefix)) return false;
  key.remove_prefix(prefix.size());
  const auto slash = key.find('/');
  if (slash == std::string_view::npos) return false;
  kind = key.substr(0, slash);
  key.remove_prefix(slash + 1);
  const auto end = key.find('/');
  if (end == std::string_view::npos || end == 0) return false;
  type = key.substr(0, end);
  return true;
}

struct type_keys {
  type_state state;
  revision leader_created = 0;
};

}  // namespace

cluster_state decode_cluster_state(std::string_view cluster, revision at,
                                   const std::vector<key_value>& kvs) {
  cluster_state out;
  out.cluster = std::string(cluster);
  out.revision = at;
  const std::string members = members_prefix(cluster);
  const std::string prefix = cluster_prefix(cluster) + "/";
  std::map<std::string, type_keys, std::less<>> types;
  std::set<coord::member_id> live;
  for (const auto& kv : kvs) {
    if (kv.key.starts_with(members)) {
      if (auto m = decode_member(cluster, kv.key, kv.value)) {
        live.insert(m->info.id);
        out.members.push_back(member_state{m->info, m->address, reachability::not_connected});
      }
      continue;
    }
    std::string_view kind;
    std::string_view type;
    if (!kind_and_type(kv.key, prefix, kind, type)) continue;
    if (kind != "regions" && kind != "coord" && kind != "alloc") continue;
    auto& t = types[std::string(type)];
    if (kind == "regions") {
      if (auto r = decode_region(cluster, type, kv.key, kv.value)) {
        t.state.regions.push_back(region_entry{r->id, r->proxy, 0});
      }
    } else if (kind == "coord") {
      // The election: the lowest create revision leads.
      if (t.leader_created == 0 || kv.create_revision < t.leader_created) {
        t.leader_created = kv.create_revision;
        t.state.coordinator = kv.value;
      }
    } else if (kind == "alloc") {
      if (auto a = decode_allocation(cluster, type, kv)) {
        t.state.shards.push_back(shard_placement{a->shard, a->owner, a->mod_revision, false});
      }
    }
  }
  for (auto& [name, t] : types) {
    t.state.type = name;
    auto& s = t.state;
    std::sort(s.regions.begin(), s.regions.end(),
              [](const auto& a, const auto& b) { return a.id < b.id; });
    std::sort(s.shards.begin(), s.shards.end(),
              [](const auto& a, const auto& b) { return a.shard < b.shard; });
    std::map<coord::member_id, std::size_t> owned;
    for (auto& shard : s.shards) {
      shard.owner_is_member = live.contains(shard.owner);
      ++owned[shard.owner];
    }
    for (auto& region : s.regions) {
      if (auto it = owned.find(region.id); it != owned.end()) region.shards = it->second;
    }
    out.types.push_back(std::move(s));
  }
  std::sort(out.members.begin(), out.members.end(),
            [](const auto& a, const auto& b) { return a.info.id < b.info.id; });
  return out;
}

void read_cluster_state(consensus_store& store, std::string cluster,
                        std::function<void(std::error_code, cluster_state)> done) {
  auto range = key_range::prefix(cluster_prefix(cluster) + "/");
  store.range(std::move(range), [cluster = std::move(cluster), done = std::move(done)](
                                    std::error_code ec, range_result r) {
    if (ec) {
      done(ec, {});
      return;
    }
    done({}, decode_cluster_state(cluster, r.header_revision, r.kvs));
  });
}

}  // namespace troupe::cluster
