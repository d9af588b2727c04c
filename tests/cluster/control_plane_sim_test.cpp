// The control plane under seeded faults, on simulated time in one thread (see
// support/control_plane_world.hpp): many seeds with every check on, one seed run twice giving one
// trace hash, and the single-activation check shown to fire when the self-fence is planted out.
#include <troupe/core/actor.hpp>

#include "support/control_plane_world.hpp"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cstdint>
#include <iostream>

namespace troupe::cluster::sim {
namespace {

// Under the sanitizers a seed takes ~0.7 s (10 ms in release, where scripts/simulate.sh runs
// the long campaigns).
constexpr std::uint64_t seeds = 100;

world_result run_seed(std::uint64_t seed, bool plant_no_self_fence = false,
                      bool plant_skip_shard_fence = false) {
  world_options o;
  o.seed = seed;
  o.plant_no_self_fence = plant_no_self_fence;
  o.plant_skip_shard_fence = plant_skip_shard_fence;
  control_plane_world world(o);
  return world.run();
}

TEST(ControlPlaneSim, EverySeedKeepsOneActivationLosesNoWriteAndSettles) {
  troupe::logger()->set_level(spdlog::level::err);  // hand-offs and elections log at info
  world_result total;
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    const auto r = run_seed(seed);
    ASSERT_TRUE(r.failure.empty()) << "seed " << seed << ": " << r.failure;
    total += r;
  }
  std::cout << seeds << " seeds: " << total.crashes << " crashes, " << total.pauses << " pauses, "
            << total.cuts << " cuts from etcd, " << total.deafs << " one-way cuts, "
            << total.partitions << " partitions, " << total.leaves << " graceful leaves, "
            << total.rebalances << " rebalance requests, " << total.lost_requests
            << " home requests lost; " << total.activations << " activations, " << total.writes
            << " writes acknowledged\n";
  // The faults the checks are meant to face did happen.
  EXPECT_GT(total.crashes, seeds / 2);
  EXPECT_GT(total.pauses, seeds / 2);
  EXPECT_GT(total.cuts, seeds / 2);
  EXPECT_GT(total.partitions, seeds / 2);
  EXPECT_GT(total.leaves, seeds / 4);
  EXPECT_GT(total.writes, 0);
}

TEST(ControlPlaneSim, OneSeedRunTwiceGivesOneTraceHash) {
  troupe::logger()->set_level(spdlog::level::err);
  const auto a = run_seed(7);
  const auto b = run_seed(7);
  ASSERT_TRUE(a.failure.empty()) << a.failure;
  EXPECT_EQ(a.trace_hash, b.trace_hash);
  EXPECT_EQ(a.activations, b.activations);
  EXPECT_EQ(a.writes, b.writes);
  EXPECT_NE(run_seed(8).trace_hash, a.trace_hash) << "another seed, another run";
}

TEST(ControlPlaneSim, FindsANodeThatDoesNotFenceItself) {
  troupe::logger()->set_level(spdlog::level::err);
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    const auto r = run_seed(seed, true);
    if (r.failure.empty()) continue;
    std::cout << "seed " << seed << " found the planted bug: " << r.failure << "\n";
    EXPECT_NE(r.failure.find("is active on"), std::string::npos) << r.failure;
    return;
  }
  FAIL() << "50 seeds did not find a node that never fences itself";
}

TEST(ControlPlaneSim, FindsAnOwnerThatSkipsTheShardFence) {
  troupe::logger()->set_level(spdlog::level::err);
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    const auto r = run_seed(seed, false, true);
    if (r.failure.empty()) continue;
    std::cout << "seed " << seed << " found the planted bug: " << r.failure << "\n";
    EXPECT_NE(r.failure.find("began acting"), std::string::npos) << r.failure;
    return;
  }
  FAIL() << "50 seeds did not find an owner that acts without raising the shard fence";
}

}  // namespace
}  // namespace troupe::cluster::sim
