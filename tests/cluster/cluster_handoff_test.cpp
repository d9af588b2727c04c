// ctest-labels: concurrency
// Shards handed off under load (the cluster of tests/cluster/support/tally_world.hpp): a node
// joins and the coordinator's strategy moves shards to it from live owners, then a node leaves
// and hands its shards off, while senders send through a proxy and through every host. On these
// graceful paths nothing may be lost (every add sent is applied, acknowledged or not), each
// sender's order holds across the moves, and no entity runs on two nodes at once.
#include <troupe/sharding/coordination/allocation_strategy.hpp>

#include "cluster/coordination/coordination_keys.hpp"
#include "support/tally_world.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace troupe::cluster {
namespace {

using namespace tally_test;

/// Rebalances often, with a strategy that evens the shard counts out in a round or two.
void rebalance_often(cluster_node_options& o) {
  o.with_rebalance_interval(200ms).with_handoff_timeout(5s);
  o.strategy = [](const sharding::region_settings&) {
    return sharding::coordination::make_least_shards_strategy({1.0, 64});
  };
}

/// Sends adds through `routes` in small batches, until `done()` or `limit`; whether done() held.
template <class Done>
bool send_until(load& l, const std::vector<route>& routes, const std::vector<std::string>& ids,
                Done done, duration limit) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < give_up) {
    l.send(10, routes, ids);
    if (done()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return done();
}

TEST(cluster_handoff,
     shards_move_to_a_joining_node_and_off_a_leaving_one_under_load_losing_nothing) {
  world w(21);
  member a(w, "a", 1, false, nullptr, rebalance_often);
  member b(w, "b", 1, false, nullptr, rebalance_often);
  member gate(w, "gate", 1, true, nullptr, rebalance_often);
  ASSERT_TRUE(holds_within(
      [&] {
        return a.cluster->hosting_regions("tally") == 2 || b.cluster->hosting_regions("tally") == 2;
      },
      10s));
  std::vector<std::string> ids;
  for (int i = 0; i < 64; ++i) ids.push_back("id-" + std::to_string(i));
  load l(21);
  std::vector<route> routes{{0, gate.region}, {1, gate.region}, {2, a.region}, {3, b.region}};
  auto all_sent = [] { return false; };
  send_until(l, routes, ids, all_sent, 500ms);  // the shards are placed on a and b
  const auto before = shards_per_node(*gate.store);
  ASSERT_EQ(before.count("c"), 0U);

  // A backlog of slow adds on every entity: the old owners still work through it when the
  // hand-offs begin, so a shard must not start on its new node before it has drained.
  l.send(400, routes, ids, 2);

  // c joins: the strategy moves shards from a and b, which still run them, to c.
  auto c = std::make_unique<member>(w, "c", 1, false, nullptr, rebalance_often);
  routes.push_back({4, c->region});
  const bool fair = send_until(
      l, routes, ids,
      [&] {
        auto now = shards_per_node(*gate.store);
        int total = 0;
        for (const auto& [node, n] : now) total += n;
        return now["c"] >= total / 3 - 1;
      },
      20s);
  ASSERT_TRUE(fair) << "c never got its share of the shards";

  // a leaves: it hands its shards off before its lease goes.
  l.send(400, routes, ids, 2);
  std::promise<std::error_code> left;
  a.cluster->leave([&](std::error_code ec) { left.set_value(ec); });
  std::erase_if(routes, [](const route& r) { return r.sender == 2; });  // a's region stops
  auto gone = left.get_future();
  ASSERT_TRUE(send_until(
      l, routes, ids,
      [&] { return gone.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }, 15s))
      << "a never finished leaving";
  EXPECT_FALSE(gone.get());
  send_until(l, routes, ids, all_sent, 300ms);
  l.settle();

  const auto stale = stale_activations(*w.log);
  EXPECT_TRUE(stale.empty()) << stale.front() << "\n" << w.log->history(ids.front());
  EXPECT_EQ(journal_faults(w.journal, ids), std::vector<std::string>{});
  const auto lost = lost_or_reordered(gate.region, ids, l, 20s, /*every_sent=*/true);
  EXPECT_TRUE(lost.empty()) << lost.size() << " found, the first: " << lost.front() << "\n"
                            << w.log->history(lost.front().substr(0, lost.front().find(':')));
  std::printf(
      "%zu adds sent, %zu acknowledged\n",
      [&] {
        std::size_t n = 0;
        for (const auto& [id, s] : l.sent()) n += s.size();
        return n;
      }(),
      l.acknowledged_count());
  c.reset();
}

}  // namespace
}  // namespace troupe::cluster
