// ctest-labels: concurrency
// Remember entities in the cluster (tests/cluster/support/tally_world.hpp): the entities a shard
// started start again, without a message, wherever the shard goes next: after a graceful leave,
// after a crash, and after the whole cluster stopped. No activation is stale on the way.
#include "support/tally_world.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace troupe::cluster {
namespace {

using namespace tally_test;

void remembering(sharding_options<tally_command>& type) { type.with_remember_entities(); }
void quick_handoffs(cluster_node_options& o) { o.with_handoff_timeout(5s); }

std::unique_ptr<member> host(world& w, const std::string& name, int incarnation = 1) {
  return std::make_unique<member>(w, name, incarnation, false, nullptr, quick_handoffs,
                                  remembering);
}

std::vector<std::string> some_ids(int count) {
  std::vector<std::string> ids;
  for (int i = 0; i < count; ++i) ids.push_back("device-" + std::to_string(i));
  return ids;
}

/// Sends one add to each id through `region` and waits for every answer.
void touch(const troupe::actor_ref<tally_command>& region, const std::vector<std::string>& ids) {
  for (const auto& id : ids) {
    region.ask<tally_reply>(tally_command{add{id, 1, 1}}, 5s, troupe::use_future).get();
  }
}

std::size_t log_size(activity& log) {
  std::lock_guard lock(log.mutex);
  return log.entries.size();
}

std::set<std::string> as_set(const std::vector<std::string>& ids) {
  return {ids.begin(), ids.end()};
}

TEST(cluster_remember_entities, a_leaving_nodes_entities_start_on_their_new_owner_unasked) {
  world w(41);
  // b hosts from the start and remembers nothing then: it hears of a's shards only as they
  // are allocated to it.
  auto a = host(w, "a");
  auto b = host(w, "b");
  member gate(w, "gate", 1, true, nullptr, quick_handoffs, remembering);
  ASSERT_TRUE(holds_within([&] { return a->cluster->hosting_regions("tally") == 2; }, 10s));
  const auto ids = some_ids(32);
  touch(gate.region, ids);
  ASSERT_TRUE(holds_within([&] { return remembered_ids(w.journal) == as_set(ids); }, 10s))
      << "what a node starts is remembered";
  const std::set<std::string> on_a = started_on(*w.log, "a#1");
  ASSERT_FALSE(on_a.empty());

  const std::size_t before_leave = log_size(*w.log);
  a->cluster->leave();
  // Nobody sends anything: b starts each remembered entity as its shard arrives.
  EXPECT_TRUE(holds_within([&] { return started_on(*w.log, "b#1", before_leave) == on_a; }, 20s))
      << started_on(*w.log, "b#1", before_leave).size() << " of " << on_a.size() << " started";
  EXPECT_EQ(remembered_ids(w.journal), as_set(ids)) << "a hand-off forgets nothing";
  const auto stale = stale_activations(*w.log);
  EXPECT_TRUE(stale.empty()) << stale.front();
}

TEST(cluster_remember_entities, a_crashed_nodes_entities_start_on_the_survivor_unasked) {
  world w(42);
  auto a = host(w, "a");
  auto b = host(w, "b");
  member gate(w, "gate", 1, true, nullptr, quick_handoffs, remembering);
  ASSERT_TRUE(holds_within([&] { return a->cluster->hosting_regions("tally") == 2; }, 10s));
  const auto ids = some_ids(32);
  touch(gate.region, ids);
  ASSERT_TRUE(holds_within([&] { return remembered_ids(w.journal) == as_set(ids); }, 10s));
  ASSERT_GT(shards_per_node(*gate.store)["a"], 0);
  const std::set<std::string> on_a = started_on(*w.log, "a#1");

  const std::size_t before_crash = log_size(*w.log);
  w.etcd.set_reachable(*a->store, false);
  w.net.memory().partition(a->node.address(), b->node.address());
  w.net.memory().partition(a->node.address(), gate.node.address());
  a.reset();
  // Once a's lease runs out, its shards come to b, and with them every entity a ran.
  EXPECT_TRUE(holds_within([&] { return started_on(*w.log, "b#1", before_crash) == on_a; }, 20s))
      << started_on(*w.log, "b#1", before_crash).size() << " of " << on_a.size() << " started";
  const auto stale = stale_activations(*w.log);
  EXPECT_TRUE(stale.empty()) << stale.front();
}

TEST(cluster_remember_entities, a_whole_cluster_restart_starts_every_remembered_entity) {
  world w(43);
  const auto ids = some_ids(16);
  {
    auto a = host(w, "a");
    member gate(w, "gate", 1, true, nullptr, quick_handoffs, remembering);
    touch(gate.region, ids);
    ASSERT_TRUE(holds_within([&] { return remembered_ids(w.journal) == as_set(ids); }, 10s));
    w.etcd.set_reachable(*a->store, false);
    w.etcd.set_reachable(*gate.store, false);
  }  // every node stops; their leases run out
  const std::size_t before_restart = log_size(*w.log);
  auto a = host(w, "a", 2);
  EXPECT_TRUE(
      holds_within([&] { return started_on(*w.log, "a#2", before_restart) == as_set(ids); }, 20s))
      << started_on(*w.log, "a#2", before_restart).size() << " of " << ids.size() << " started";
}

}  // namespace
}  // namespace troupe::cluster
