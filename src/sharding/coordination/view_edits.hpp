#pragma once
// INTERNAL. Small edits of a coordinator's view of the regions (which region holds which shard)
// and names for its log lines, shared by the coordinator's passes.

#include <troupe/core/clock.hpp>
#include <troupe/sharding/coordination/allocation_strategy.hpp>
#include <troupe/sharding/coordination/cluster_view.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace troupe::sharding::coordination::detail {

inline std::string describe(const member_id& m) {
  return m.node + "#" + std::to_string(m.incarnation);
}

inline std::string describe(duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

inline region_view* find_region(std::vector<region_view>& view, const member_id& region) {
  auto it = std::find_if(view.begin(), view.end(),
                         [&](const region_view& r) { return r.region == region; });
  return it == view.end() ? nullptr : &*it;
}

inline void add_shard(region_view& region, shard_id shard) {
  region.shards.insert(std::upper_bound(region.shards.begin(), region.shards.end(), shard), shard);
}

inline void remove_shard(std::vector<region_view>& view, const member_id& region, shard_id shard) {
  if (auto* r = find_region(view, region)) {
    std::erase(r->shards, shard);
  }
}

}  // namespace troupe::sharding::coordination::detail
