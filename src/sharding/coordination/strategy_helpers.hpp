#pragma once
// INTERNAL. What the built-in allocation strategies share: the total of a view's shards, when a
// rebalance may run, and the allocation order of least-shards and load-aware.

#include <troupe/sharding/coordination/allocation_strategy.hpp>
#include <troupe/sharding/coordination/cluster_view.hpp>

#include <cstddef>
#include <span>

namespace troupe::sharding::coordination::detail {

inline std::size_t total_shards(std::span<const region_view> regions) {
  std::size_t total = 0;
  for (const auto& r : regions) {
    total += r.shards.size();
  }
  return total;
}

// Moving shards while a member leaves or while versions are mixed would fight the leave or the
// rolling update, so rebalance waits for both to finish.
inline bool a_good_time(std::span<const region_view> regions) {
  for (const auto& r : regions) {
    if (r.leaving || r.app_version != regions.front().app_version) {
      return false;
    }
  }
  return true;
}

// Whether `a` may take a new shard rather than `b` at all: it is not leaving while `b` is, or
// runs a newer application version. 0 when neither is preferred.
inline int suitability(const region_view& a, const region_view& b) {
  if (a.leaving != b.leaving) {
    return a.leaving ? -1 : 1;
  }
  const auto c = compare_app_versions(a.app_version, b.app_version);
  return c > 0 ? 1 : c < 0 ? -1 : 0;
}

// The allocation order: true when `a` comes before `b`. Not leaving, then the newest version,
// then the lower load (`a_load`, `b_load`: load-aware's criterion; least-shards passes none),
// then the fewest shards, then the lowest member id.
inline bool better(const region_view& a, const region_view& b, double a_load = 0,
                   double b_load = 0) {
  if (const auto s = suitability(a, b); s != 0) {
    return s > 0;
  }
  if (a_load != b_load) {
    return a_load < b_load;
  }
  if (a.shards.size() != b.shards.size()) {
    return a.shards.size() < b.shards.size();
  }
  return a.region < b.region;
}

}  // namespace troupe::sharding::coordination::detail
