// ctest-labels: concurrency
// Each hosting region reports its shards' message rates under its node's lease, and the
// coordinator's strategy sees them (the cluster of tests/cluster/support/tally_world.hpp).
#include <troupe/sharding/coordination/allocation_strategy.hpp>
#include <troupe/sharding/shard_id.hpp>

#include "cluster/coordination/coordination_keys.hpp"
#include "cluster/coordination/load_keys.hpp"
#include "support/tally_world.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace troupe::cluster {
namespace {

using namespace tally_test;
namespace coord = sharding::coordination;

/// The load reports of "tally" in the store now, by node.
std::map<std::string, coord::load_report> reports(consensus_store& store) {
  std::promise<range_result> read;
  store.range(key_range::prefix(load_prefix("faults", "tally")),
              [&](std::error_code, range_result r) { read.set_value(std::move(r)); });
  std::map<std::string, coord::load_report> out;
  for (const auto& kv : read.get_future().get().kvs) {
    if (auto r = decode_load_report("faults", "tally", kv.key, kv.value)) {
      out[r->region.node] = std::move(*r);
    }
  }
  return out;
}

/// Least shards, remembering the last loads the coordinator gave it.
class watching_strategy final : public coord::allocation_strategy {
 public:
  explicit watching_strategy(std::shared_ptr<std::map<sharding::shard_id, double>> seen)
      : inner_(coord::make_least_shards_strategy()), seen_(std::move(seen)) {}
  std::optional<coord::member_id> allocate(sharding::shard_id s,
                                           std::span<const coord::region_view> r) override {
    return inner_->allocate(s, r);
  }
  std::vector<sharding::shard_id> rebalance(std::span<const coord::region_view> r,
                                            std::span<const sharding::shard_id> p) override {
    return inner_->rebalance(r, p);
  }
  void observe_load(std::span<const coord::shard_load> loads) override {
    std::lock_guard lock(mutex);
    seen_->clear();
    for (const auto& l : loads) (*seen_)[l.shard] = l.per_second;
  }
  static inline std::mutex mutex;  // the test reads what the coordinator's strand writes

 private:
  std::unique_ptr<coord::allocation_strategy> inner_;
  std::shared_ptr<std::map<sharding::shard_id, double>> seen_;
};

TEST(cluster_load_report, a_hot_shards_rate_reaches_the_store_and_the_coordinators_strategy) {
  world w(5);
  auto seen = std::make_shared<std::map<sharding::shard_id, double>>();
  auto tune = [&](cluster_node_options& o) {
    o.with_rebalance_interval(200ms);  // reports every 100 ms
    o.strategy = [seen](const sharding::region_settings&) {
      return std::make_unique<watching_strategy>(seen);
    };
  };
  member a(w, "a", 1, false, nullptr, tune);
  member b(w, "b", 1, false, nullptr, tune);
  const std::string hot = "hot-entity";
  const auto hot_shard = sharding::shard_of(hot, 64);
  load l(5);
  const std::vector<std::string> ids(4, hot);  // load::send picks among four hot ids
  const std::vector<route> routes{{0, a.region}, {1, b.region}};
  std::map<std::string, coord::load_report> now;
  const bool reported = holds_within(
      [&] {
        l.send(20, routes, ids);
        l.settle();
        now = reports(*a.store);
        for (const auto& [node, r] : now) {
          for (const auto& s : r.loads) {
            if (s.shard == hot_shard && s.per_second > 0) return true;
          }
        }
        return false;
      },
      10s);
  ASSERT_TRUE(reported) << "no region reported the hot shard's rate";
  EXPECT_TRUE(holds_within(
      [&] {
        std::lock_guard lock(watching_strategy::mutex);
        auto it = seen->find(hot_shard);
        return it != seen->end() && it->second > 0;
      },
      10s))
      << "the coordinator's strategy never saw the rate";
  // The report lives under its node's lease: it goes when the node leaves.
  std::promise<std::error_code> left;
  b.cluster->leave([&](std::error_code ec) { left.set_value(ec); });
  EXPECT_FALSE(left.get_future().get());
  EXPECT_TRUE(holds_within([&] { return !reports(*a.store).contains("b"); }, 10s));
}

}  // namespace
}  // namespace troupe::cluster
