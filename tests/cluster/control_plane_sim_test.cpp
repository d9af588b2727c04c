// The control plane under seeded faults, on simulated time in one thread (see
// support/control_plane_world.hpp): many seeds with every check on, one seed run twice giving one
// trace hash, and the single-activation check shown to fire when the self-fence is planted out.
#include <troupe/core/actor.hpp>

#include "support/control_plane_world.hpp"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cstdint>
#include <iostream>
#include <string>

namespace troupe::cluster::sim {
namespace {

// 1,000 seeds in ten blocks of 100, each its own ctest case so that `ctest -j` spreads them over
// the cores: under the sanitizers a block takes about 45 s of one core (a seed ~10 ms in release,
// where scripts/simulate.sh runs the long campaigns).
constexpr std::uint64_t seeds_per_block = 100;
constexpr std::uint64_t blocks = 10;

world_result run_seed(std::uint64_t seed, bool plant_no_self_fence = false,
                      bool plant_skip_shard_fence = false) {
  world_options o;
  o.seed = seed;
  o.plant_no_self_fence = plant_no_self_fence;
  o.plant_skip_shard_fence = plant_skip_shard_fence;
  control_plane_world world(o);
  return world.run();
}

class ControlPlaneSeeds : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(ControlPlaneSeeds, EverySeedKeepsOneActivationLosesNoWriteAndSettles) {
  troupe::logger()->set_level(spdlog::level::err);  // hand-offs and elections log at info
  const std::uint64_t first = GetParam() * seeds_per_block + 1;
  world_result total;
  for (std::uint64_t seed = first; seed < first + seeds_per_block; ++seed) {
    const auto r = run_seed(seed);
    ASSERT_TRUE(r.failure.empty()) << "seed " << seed << ": " << r.failure
                                   << "\n  replay: scripts/simulate.sh --seeds 1 --from " << seed;
    total += r;
  }
  std::cout << "seeds " << first << ".." << first + seeds_per_block - 1 << ": " << total.crashes
            << " crashes, " << total.pauses << " pauses, " << total.cuts << " cuts from etcd, "
            << total.deafs << " one-way cuts, " << total.partitions << " partitions, "
            << total.leaves << " graceful leaves, " << total.rebalances << " rebalance requests, "
            << total.lost_requests << " home requests lost; " << total.activations
            << " activations, " << total.writes << " writes acknowledged\n";
  // The faults the checks are meant to face did happen.
  EXPECT_GT(total.crashes, seeds_per_block / 2);
  EXPECT_GT(total.pauses, seeds_per_block / 2);
  EXPECT_GT(total.cuts, seeds_per_block / 2);
  EXPECT_GT(total.partitions, seeds_per_block / 2);
  EXPECT_GT(total.leaves, seeds_per_block / 4);
  EXPECT_GT(total.writes, 0);
}

INSTANTIATE_TEST_SUITE_P(Blocks, ControlPlaneSeeds, ::testing::Range<std::uint64_t>(0, blocks),
                         [](const ::testing::TestParamInfo<std::uint64_t>& block) {
                           const auto first = block.param * seeds_per_block + 1;
                           return "seeds_" + std::to_string(first) + "_to_" +
                                  std::to_string(first + seeds_per_block - 1);
                         });

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
