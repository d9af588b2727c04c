// ctest-labels: concurrency
// The cluster's own metrics (cluster_node_options::metrics), on the cluster of
// tests/cluster/support/tally_world.hpp: every node times its lease renewals; exactly one node
// leads the type; the leader counts the shards it allocates, the hand-offs it begins and
// completes when a node joins (with their durations) and its rebalance rounds; and a node that
// leaves counts its fence, by reason. Each node names itself in troupe_node_info.
#include <troupe/core/metrics.hpp>
#include <troupe/sharding/coordination/allocation_strategy.hpp>
#include <troupe/testkit/metric_values.hpp>

#include "support/tally_world.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

namespace troupe::cluster {
namespace {

using namespace tally_test;
using troupe::testkit::metric_value;
using troupe::testkit::observations;

/// Records into `registry` and rebalances often, evening shard counts out in a round or two.
std::function<void(cluster_node_options&)> measured(std::shared_ptr<metrics_registry> registry) {
  return [registry](cluster_node_options& o) {
    o.with_metrics(registry).with_rebalance_interval(200ms).with_handoff_timeout(5s);
    o.strategy = [](const sharding::region_settings&) {
      return sharding::coordination::make_least_shards_strategy({1.0, 64});
    };
  };
}

double count(metrics_registry& r, const std::string& name, const std::vector<std::string>& labels) {
  return metric_value(r.collect(), name, labels).value_or(0.0);
}

TEST(cluster_metrics, count_renewals_leadership_allocations_handoffs_rounds_and_fences) {
  world w(9);
  auto ra = std::make_shared<metrics_registry>();
  auto rb = std::make_shared<metrics_registry>();
  auto rc = std::make_shared<metrics_registry>();
  member a(w, "a", 1, false, nullptr, measured(ra));
  member b(w, "b", 1, false, nullptr, measured(rb));
  ASSERT_TRUE(holds_within(
      [&] {
        return a.cluster->hosting_regions("tally") == 2 || b.cluster->hosting_regions("tally") == 2;
      },
      10s));
  const bool a_leads = a.cluster->leads("tally");
  auto& leader = a_leads ? *ra : *rb;
  auto& follower = a_leads ? *rb : *ra;
  EXPECT_EQ(count(leader, "troupe_coordinator_leader", {"tally"}), 1.0);
  // Each node names itself in troupe_node_info's labels (the app version is unset here).
  EXPECT_EQ(
      count(*ra, "troupe_node_info", {"faults", "a", to_string(a.node.remote->self().address), ""}),
      1.0);
  EXPECT_EQ(
      count(*rb, "troupe_node_info", {"faults", "b", to_string(b.node.remote->self().address), ""}),
      1.0);
  EXPECT_EQ(count(follower, "troupe_coordinator_leader", {"tally"}), 0.0);

  std::vector<std::string> ids;
  for (int i = 0; i < 64; ++i) ids.push_back("id-" + std::to_string(i));
  load l(9);
  const std::vector<route> routes{{0, a.region}, {1, b.region}};
  l.send(200, routes, ids);
  l.settle();
  // Every shard that got a message was allocated once, by the leader only.
  double placed = 0;
  for (const auto& [node, n] : shards_per_node(*a.store)) placed += n;
  EXPECT_GT(placed, 0);
  // The regions may see an allocation (through their watch) before the leader hears its write
  // committed.
  EXPECT_TRUE(holds_within(
      [&] { return count(leader, "troupe_shard_allocations_total", {"tally"}) == placed; }, 5s))
      << count(leader, "troupe_shard_allocations_total", {"tally"}) << " of " << placed;
  EXPECT_EQ(count(follower, "troupe_shard_allocations_total", {"tally"}), 0.0);

  // c joins: the leader hands shards off to it, round by round.
  auto c = std::make_unique<member>(w, "c", 1, false, nullptr, measured(rc));
  ASSERT_TRUE(holds_within(
      [&] {
        return count(leader, "troupe_handoffs_total", {"tally", "completed"}) >= 1 &&
               count(leader, "troupe_handoffs_total", {"tally", "completed"}) ==
                   count(leader, "troupe_handoffs_total", {"tally", "begun"}) -
                       count(leader, "troupe_handoffs_total", {"tally", "aborted"});
      },
      20s))
      << "begun " << count(leader, "troupe_handoffs_total", {"tally", "begun"}) << ", completed "
      << count(leader, "troupe_handoffs_total", {"tally", "completed"});
  const auto snapshot = leader.collect();
  EXPECT_GE(observations(snapshot, "troupe_handoff_duration_seconds", {"tally"}), 1U);
  EXPECT_GE(metric_value(snapshot, "troupe_rebalance_rounds_total", {"tally"}).value_or(0), 1.0);
  EXPECT_EQ(count(follower, "troupe_handoffs_total", {"tally", "begun"}), 0.0);

  // Renewals go out every TTL/3 (2 s / 3): each node has timed some by now.
  for (auto* r : {ra.get(), rb.get(), rc.get()}) {
    EXPECT_TRUE(holds_within(
        [&] { return observations(r->collect(), "troupe_lease_renewal_seconds") >= 1; }, 10s));
  }

  // c leaves: it revokes its lease, fencing itself first, and counts that.
  std::promise<std::error_code> left;
  c->cluster->leave([&](std::error_code ec) { left.set_value(ec); });
  auto gone = left.get_future();
  ASSERT_EQ(gone.wait_for(troupe::testkit::dilated(30s)), std::future_status::ready);
  EXPECT_FALSE(gone.get());
  EXPECT_TRUE(
      holds_within([&] { return count(*rc, "troupe_self_fences_total", {"revoked"}) == 1.0; }, 5s));
  EXPECT_EQ(count(leader, "troupe_self_fences_total", {"revoked"}), 0.0);
  c.reset();
}

}  // namespace
}  // namespace troupe::cluster
