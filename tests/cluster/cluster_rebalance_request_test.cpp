// ctest-labels: concurrency
// A rebalance on request (cluster_node::rebalance, behind the management API's
// POST /cluster/rebalance/<type>): with a rebalance interval of an hour, a node that joins gets no
// shard from the live owners until an operator asks, on any node, and then gets its share within
// seconds. A type the node does not run is refused.
#include <troupe/sharding/coordination/allocation_strategy.hpp>
#include <troupe/testkit/metric_values.hpp>
#include <troupe/testkit/test_probe.hpp>

#include "support/tally_world.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace troupe::cluster {
namespace {

using namespace tally_test;

/// Rebalances only on request, once a term's first tick has run its round: the interval's next
/// round is an hour away. Records into `registry`.
std::function<void(cluster_node_options&)> on_request_only(
    std::shared_ptr<metrics_registry> registry) {
  return [registry](cluster_node_options& o) {
    o.with_metrics(registry)
        .with_rebalance_interval(std::chrono::hours(1))
        .with_handoff_timeout(5s);
    o.strategy = [](const sharding::region_settings&) {
      return sharding::coordination::make_least_shards_strategy({1.0, 64});
    };
  };
}

double rounds(metrics_registry& r) {
  return troupe::testkit::metric_value(r.collect(), "troupe_rebalance_rounds_total", {"tally"})
      .value_or(0);
}

TEST(cluster_rebalance_request, moves_shards_to_a_new_node_only_when_an_operator_asks) {
  world w(5);
  auto ra = std::make_shared<metrics_registry>();
  auto rb = std::make_shared<metrics_registry>();
  member a(w, "a", 1, false, nullptr, on_request_only(ra));
  member b(w, "b", 1, false, nullptr, on_request_only(rb));
  ASSERT_TRUE(holds_within(
      [&] {
        return a.cluster->hosting_regions("tally") == 2 || b.cluster->hosting_regions("tally") == 2;
      },
      10s));
  std::vector<std::string> ids;
  for (int i = 0; i < 64; ++i) ids.push_back("id-" + std::to_string(i));
  load l(5);
  const std::vector<route> routes{{0, a.region}, {1, b.region}};
  l.send(400, routes, ids);  // places most of the 64 shards on a and b
  l.settle();
  const auto placed = shards_per_node(*a.store);
  ASSERT_EQ(placed.count("c"), 0U);
  int total = 0;
  for (const auto& [node, n] : placed) total += n;

  // The leader's first tick runs a round (it balances a and b); c joins after it.
  ASSERT_TRUE(holds_within([&] { return rounds(*ra) + rounds(*rb) >= 1; }, 10s));
  member c(w, "c", 1, false, nullptr, on_request_only(std::make_shared<metrics_registry>()));
  auto leader_knows_c = [&] {
    return a.cluster->hosting_regions("tally") == 3 || b.cluster->hosting_regions("tally") == 3;
  };
  ASSERT_TRUE(holds_within(leader_knows_c, 10s));
  // Ticks pass (one a second) and no round runs: the interval holds the shards where they are.
  std::this_thread::sleep_for(troupe::testkit::dilated(1500ms));
  ASSERT_EQ(shards_per_node(*a.store).count("c"), 0U) << "moved without being asked";

  EXPECT_FALSE(c.cluster->rebalance("no-such-type"));
  // c asks; it does not lead (a or b, which came first, does), so the request crosses the network.
  ASSERT_TRUE(c.cluster->rebalance("tally"));
  EXPECT_TRUE(holds_within([&] { return rounds(*ra) + rounds(*rb) >= 2; }, 10s));
  EXPECT_TRUE(holds_within([&] { return shards_per_node(*a.store)["c"] >= total / 3 - 1; }, 20s))
      << "c has " << shards_per_node(*a.store)["c"] << " of " << total
      << " shards after the request";

  l.send(400, routes, ids);
  l.settle();
  const auto lost = lost_or_reordered(a.region, ids, l, 20s, /*every_sent=*/true);
  EXPECT_TRUE(lost.empty()) << lost.size() << " found, the first: " << lost.front();
  const auto stale = stale_activations(*w.log);
  EXPECT_TRUE(stale.empty()) << stale.front();
}

}  // namespace
}  // namespace troupe::cluster
