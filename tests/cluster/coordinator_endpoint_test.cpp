// ctest-labels: concurrency
// A region's home request reaches the coordinator on whichever node leads: two nodes on the
// in-memory network and one in-process etcd; node a's runner leads, node b's region asks, and
// its question crosses to a's endpoint, whose runner allocates the shard that b then sees.
#include "cluster/coordination/coordinator_endpoint.hpp"

#include <troupe/cluster/cluster_messages.hpp>
#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/sharding/coordination/allocation_strategy.hpp>
#include <troupe/testkit/test_probe.hpp>

#include "cluster/coordination/coordination_keys.hpp"
#include "cluster/membership/members.hpp"
#include "support/io_thread.hpp"
#include "support/two_nodes.hpp"

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>

namespace troupe::cluster {
namespace {

using namespace std::chrono_literals;
namespace coord = sharding::coordination;
using sharding::no_home_yet;
using sharding::shard_home;
using troupe::testkit::await_condition;

constexpr const char* cluster = "c1";
constexpr const char* type = "cart";

std::shared_ptr<message_registry> registry() {
  auto r = std::make_shared<message_registry>();
  add_cluster_messages(*r);
  return r;
}

/// One node of the test: its remoting, its store client, its lease and member key, its runner
/// and placement of `type`, and its endpoint.
struct member {
  member(test::network& net, in_process_etcd& etcd, test::io_thread& io, const std::string& name)
      : remote(net, registry(), {}, name), store(etcd.client(io.executor())) {
    std::promise<lease_id> lease;
    store->grant_lease(60s,
                       [&](std::error_code ec, lease_grant g) { lease.set_value(ec ? 0 : g.id); });
    self = {name, lease.get_future().get()};
    member_record m;
    m.info.id = self;
    m.address = to_string(remote.address());
    std::promise<std::error_code> joined;
    register_member(*store, cluster, m,
                    [&](std::error_code ec, revision) { joined.set_value(ec); });
    EXPECT_FALSE(joined.get_future().get());

    auto endpoint = remote.system.spawn_system_actor<coordinator_endpoint>(
        spawn_options{"cluster-coordinators"}, runners);
    remote.remote->expose(endpoint);
  }

  void start_runner(std::shared_ptr<troupe::clock> clock) {
    coordinator_runner_options o;
    o.cluster = cluster;
    o.type = type;
    o.self = self;
    runners->set(type, coordinator_runner::start(store, std::move(clock), o,
                                                 coord::make_hash_mod_regions_strategy(),
                                                 [](const coord::answer_home&) {}));
  }

  void start_placement(std::shared_ptr<troupe::clock> clock) {
    cluster_placement_options o;
    o.cluster = cluster;
    o.type = type;
    o.self = self;
    auto cell = std::make_shared<std::weak_ptr<cluster_placement>>();
    home_request ask = ask_every_coordinator(runners, *remote.remote, type, self, cell);
    placement = cluster_placement::start(store, std::move(clock), o, {}, std::move(ask));
    *cell = placement;
  }

  ~member() {
    if (placement) placement->stop();
    if (auto r = runners->find(type)) r->stop();
  }

  test::node remote;
  std::shared_ptr<consensus_store> store;
  coord::member_id self;
  std::shared_ptr<coordinator_directory> runners = std::make_shared<coordinator_directory>();
  std::shared_ptr<cluster_placement> placement;
};

class coordinator_endpoint_test : public ::testing::Test {
 protected:
  test::network net_{test::net_kind::memory};
  std::shared_ptr<troupe::clock> clock_ = make_steady_clock();
  in_process_etcd etcd_{clock_};
  test::io_thread io_;
};

TEST_F(coordinator_endpoint_test,
       a_followers_question_reaches_the_leader_and_its_answer_comes_back) {
  member a(net_, etcd_, io_, "a");
  member b(net_, etcd_, io_, "b");
  a.start_runner(clock_);
  await_condition([&] { return a.runners->find(type)->leading(); }, 5s, "a leads");
  b.start_runner(clock_);
  a.start_placement(clock_);
  b.start_placement(clock_);
  await_condition([&] { return a.placement->ready() && b.placement->ready(); }, 5s, "ready");
  ASSERT_FALSE(b.runners->find(type)->leading());

  // Only b's region asks: its own runner ignores the question, so the answer must come from a
  // (asking only the local runner, planted on purpose, fails here).
  for (sharding::shard_id s = 0; s < 8; ++s) (void)b.placement->home_of(s);
  const auto placed_all = [&] {
    for (sharding::shard_id s = 0; s < 8; ++s) {
      if (std::holds_alternative<no_home_yet>(b.placement->home_of(s))) return false;
    }
    return true;
  };
  await_condition(placed_all, 10s, "b's shards have homes");
  // Both regions are registered, so hash-mod-regions spreads the eight shards over a and b.
  int here = 0;
  for (sharding::shard_id s = 0; s < 8; ++s) {
    here += std::holds_alternative<sharding::placed_here>(b.placement->home_of(s)) ? 1 : 0;
  }
  EXPECT_GT(here, 0);
  EXPECT_LT(here, 8);
}

}  // namespace
}  // namespace troupe::cluster
