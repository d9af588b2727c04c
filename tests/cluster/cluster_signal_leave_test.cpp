// ctest-labels: concurrency
// SIGTERM through actor_system::run_until_signal: a cluster node leaves gracefully before its
// system stops (its shards are handed off to the others), so nothing sent is lost (the cluster of
// tests/cluster/support/tally_world.hpp).
#include <troupe/sharding/coordination/allocation_strategy.hpp>

#include "cluster/coordination/coordination_keys.hpp"
#include "support/tally_world.hpp"

#include <boost/asio/signal_set.hpp>
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <map>
#include <string>
#include <vector>

namespace troupe::cluster {
namespace {

using namespace tally_test;

TEST(cluster_signal_leave, sigterm_hands_the_nodes_shards_off_before_its_system_stops) {
  // A set of our own keeps SIGTERM from killing the test before run_until_signal listens; the
  // signal is sent until run_until_signal's first step (the test's) has run.
  boost::asio::io_context io;
  boost::asio::signal_set keep(io, SIGTERM);
  world w(31);
  auto tune = [](cluster_node_options& o) { o.with_handoff_timeout(5s); };
  member a(w, "a", 1, false, nullptr, tune);
  member b(w, "b", 1, false, nullptr, tune);
  member gate(w, "gate", 1, true, nullptr, tune);
  ASSERT_TRUE(holds_within(
      [&] {
        return a.cluster->hosting_regions("tally") == 2 || b.cluster->hosting_regions("tally") == 2;
      },
      10s));
  std::vector<std::string> ids;
  for (int i = 0; i < 32; ++i) ids.push_back("id-" + std::to_string(i));
  load l(31);
  const std::vector<route> routes{{0, gate.region}, {1, a.region}};
  l.send(200, routes, ids);
  ASSERT_TRUE(holds_within([&] { return shards_per_node(*gate.store)["b"] > 0; }, 10s));

  std::atomic<bool> signalled{false};
  b.node.system.add_signal_step([&] { signalled = true; });
  auto stopped = std::async(std::launch::async, [&] { return b.node.system.run_until_signal(); });
  ASSERT_TRUE(holds_within(
      [&] {
        ::kill(::getpid(), SIGTERM);
        return signalled.load();
      },
      10s))
      << "run_until_signal never saw the signal";
  // Load while b hands its shards off: what b's shards get waits for their next owner.
  while (stopped.wait_for(20ms) != std::future_status::ready) l.send(5, routes, ids);
  EXPECT_EQ(stopped.get(), SIGTERM);
  EXPECT_TRUE(b.node.system.is_terminated());
  EXPECT_EQ(shards_per_node(*gate.store).count("b"), 0U) << "b's shards were handed off first";
  l.send(100, routes, ids);
  l.settle();

  const auto stale = stale_activations(*w.log);
  EXPECT_TRUE(stale.empty()) << stale.front();
  EXPECT_EQ(journal_faults(w.journal, ids), std::vector<std::string>{});
  const auto lost = lost_or_reordered(gate.region, ids, l, 20s, /*every_sent=*/true);
  EXPECT_TRUE(lost.empty()) << lost.size() << " found, the first: " << lost.front();
}

}  // namespace
}  // namespace troupe::cluster
