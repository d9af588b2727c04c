// ctest-labels: concurrency
// Remember entities in the cluster (tests/cluster/support/tally_world.hpp): the entities a shard
// started start again, without a message, wherever the shard goes next: after a graceful leave,
// after a crash, and after the whole cluster stopped. No activation is stale on the way.
#include <troupe/sharding/shard_id.hpp>

#include "support/tally_world.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <stdexcept>
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

/// What `expected` has that `got` lacks, each with its history in `log`: a failure's context.
std::string missing(activity& log, const std::set<std::string>& expected,
                    const std::set<std::string>& got) {
  std::string out;
  for (const auto& id : expected) {
    if (got.contains(id)) continue;
    out += "  " + id + " (shard " + std::to_string(troupe::sharding::shard_of(id, 64)) +
           ") did not start; its history:\n" + log.history(id);
  }
  return out;
}

/// Hosts a and b (b remembers nothing at first: it hears of a's shards only as they are
/// allocated to it) and a proxy; 32 entities started through the proxy and remembered.
struct two_hosts {
  explicit two_hosts(std::uint64_t seed) : w(seed) {
    a = host(w, "a");
    b = host(w, "b");
    gate = std::make_unique<member>(w, "gate", 1, true, nullptr, quick_handoffs, remembering);
    if (!holds_within([&] { return a->cluster->hosting_regions("tally") == 2; }, 10s)) {
      throw std::runtime_error("a never saw two hosting regions");
    }
    touch(gate->region, ids);
    if (!holds_within([&] { return remembered_ids(w.journal) == as_set(ids); }, 10s)) {
      throw std::runtime_error("what the nodes started was not remembered");
    }
    on_a = started_on(*w.log, "a#1");
  }
  world w;
  std::unique_ptr<member> a;
  std::unique_ptr<member> b;
  std::unique_ptr<member> gate;
  const std::vector<std::string> ids = some_ids(32);
  std::set<std::string> on_a;  // the entities a started
};

TEST(cluster_remember_entities, a_leaving_nodes_entities_start_on_their_new_owner_unasked) {
  two_hosts c(41);
  ASSERT_FALSE(c.on_a.empty());

  const std::size_t before_leave = log_size(*c.w.log);
  c.a->cluster->leave();
  // Nobody sends anything: b starts each remembered entity as its shard arrives.
  EXPECT_TRUE(
      holds_within([&] { return started_on(*c.w.log, "b#1", before_leave) == c.on_a; }, 20s))
      << started_on(*c.w.log, "b#1", before_leave).size() << " of " << c.on_a.size() << " started\n"
      << missing(*c.w.log, c.on_a, started_on(*c.w.log, "b#1", before_leave));
  EXPECT_EQ(remembered_ids(c.w.journal), as_set(c.ids)) << "a hand-off forgets nothing";
  const auto stale = stale_activations(*c.w.log);
  EXPECT_TRUE(stale.empty()) << stale.front();
}

TEST(cluster_remember_entities, a_crashed_nodes_entities_start_on_the_survivor_unasked) {
  two_hosts c(42);
  ASSERT_GT(shards_per_node(*c.gate->store)["a"], 0);

  const std::size_t before_crash = log_size(*c.w.log);
  c.w.etcd.set_reachable(*c.a->store, false);
  c.w.net.memory().partition(c.a->node.address(), c.b->node.address());
  c.w.net.memory().partition(c.a->node.address(), c.gate->node.address());
  c.a.reset();
  // Once a's lease runs out, its shards come to b, and with them every entity a ran.
  EXPECT_TRUE(
      holds_within([&] { return started_on(*c.w.log, "b#1", before_crash) == c.on_a; }, 20s))
      << started_on(*c.w.log, "b#1", before_crash).size() << " of " << c.on_a.size() << " started";
  const auto stale = stale_activations(*c.w.log);
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
