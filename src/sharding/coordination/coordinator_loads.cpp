// The regions' load reports: kept per region and handed to the strategy, which may use them to
// spread hot shards (the load-aware strategy) or ignore them.
#include <troupe/sharding/coordination/coordinator.hpp>

#include <exception>
#include <map>
#include <utility>

namespace troupe::sharding::coordination {

void coordinator::on(const load_reported& e, out&) {
  // Reports are advice: no decision waits for one, and a stale one only skews the next plan.
  if (!key_create_revision_) {
    return;
  }
  if (e.report.loads.empty()) {
    loads_.erase(e.report.region);
  } else {
    loads_[e.report.region] = e.report.loads;
  }
  publish_loads();
}

void coordinator::publish_loads() {
  // A shard that just moved may still be in its old owner's last report; its new owner's
  // report, once there, is the one that counts.
  std::map<shard_id, std::pair<bool, double>> merged;  // shard -> (from its owner, rate)
  for (const auto& [region, loads] : loads_) {
    for (const auto& l : loads) {
      const auto a = allocations_.find(l.shard);
      const bool owner = a != allocations_.end() && a->second.owner == region;
      auto [it, fresh] = merged.try_emplace(l.shard, owner, l.per_second);
      if (!fresh && (owner || (!it->second.first && l.per_second > it->second.second))) {
        it->second = {owner, l.per_second};
      }
    }
  }
  std::vector<shard_load> loads;
  loads.reserve(merged.size());
  for (const auto& [shard, rate] : merged) {
    loads.push_back(shard_load{shard, rate.second});
  }
  try {
    strategy_->observe_load(loads);
  } catch (const std::exception&) {
    // A user strategy that cannot take a report keeps planning on what it had.
  }
}

}  // namespace troupe::sharding::coordination
