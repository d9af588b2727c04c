// The allocation strategies as pure functions: hash mod regions (the spec's default) and least
// shards (Akka 2.6.10's), their rebalance limits and the application-version order.
#include <troupe/sharding/coordination/allocation_strategy.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

namespace troupe::sharding::coordination {
namespace {

region_view region(std::string node, std::vector<shard_id> shards = {}, bool leaving = false,
                   std::string version = {}) {
  std::sort(shards.begin(), shards.end());
  return region_view{member_id{std::move(node), 1}, leaving, std::move(version), std::move(shards)};
}

std::vector<shard_id> range(shard_id from, shard_id to) {
  std::vector<shard_id> out(to - from);
  std::iota(out.begin(), out.end(), from);
  return out;
}

TEST(AppVersions, CompareNumbersAsNumbersAndMissingPartsFirst) {
  EXPECT_EQ(compare_app_versions("1.10", "1.9"), std::strong_ordering::greater);
  EXPECT_EQ(compare_app_versions("1.2", "1.2.0"), std::strong_ordering::less);
  EXPECT_EQ(compare_app_versions("2", "10"), std::strong_ordering::less);
  EXPECT_EQ(compare_app_versions("01.2", "1.2"), std::strong_ordering::equal);
  EXPECT_EQ(compare_app_versions("", "0"), std::strong_ordering::less);
  EXPECT_EQ(compare_app_versions("1.0-rc1", "1.0-rc2"), std::strong_ordering::less);
  EXPECT_EQ(compare_app_versions("3.1", "3.1"), std::strong_ordering::equal);
}

TEST(RebalanceLimit, IsTheSmallerOfRelativeAndAbsoluteButAtLeastOne) {
  const rebalance_limits limits{0.1, 20};
  EXPECT_EQ(rebalance_limit(limits, 64), 6U);
  EXPECT_EQ(rebalance_limit(limits, 5), 1U);
  EXPECT_EQ(rebalance_limit(limits, 0), 1U);
  EXPECT_EQ(rebalance_limit(limits, 1000), 20U);
  EXPECT_EQ(rebalance_limit({1.0, 0}, 1000), 1U);
}

TEST(RebalanceLimit, DefaultsLetANodeJoiningThreeTakeItsShareInOneRound) {
  const rebalance_limits defaults;
  EXPECT_EQ(defaults.relative, 0.3);
  EXPECT_EQ(defaults.absolute, 20U);
  // A fourth node needs 64 / 4 = 16 shards: one round of min(int(0.3 × 64), 20) = 19.
  EXPECT_EQ(rebalance_limit(defaults, 64), 19U);
  EXPECT_GE(rebalance_limit(defaults, 64), 64U / 4);
  // A third node needs 22 of 64: two rounds.
  EXPECT_LT(rebalance_limit(defaults, 64), 22U);
  EXPECT_GE(2 * rebalance_limit(defaults, 64), 22U);
  EXPECT_EQ(rebalance_limit(defaults, 1000), 20U);
}

TEST(HashModRegions, PicksShardModRegionsOverRegionsSortedById) {
  auto strategy = make_hash_mod_regions_strategy();
  const std::vector<region_view> abc{region("a"), region("b"), region("c")};
  const std::vector<region_view> cab{region("c"), region("a"), region("b")};
  for (shard_id s = 0; s < 12; ++s) {
    const auto expected = std::string(1, static_cast<char>('a' + s % 3));
    EXPECT_EQ(strategy->allocate(s, abc)->node, expected) << s;
    EXPECT_EQ(strategy->allocate(s, cab)->node, expected) << "the input order must not matter";
  }
}

TEST(HashModRegions, AvoidsLeavingRegionsUnlessAllLeave) {
  auto strategy = make_hash_mod_regions_strategy();
  const std::vector<region_view> one_leaving{region("a", {}, true), region("b"), region("c")};
  for (shard_id s = 0; s < 8; ++s) {
    EXPECT_NE(strategy->allocate(s, one_leaving)->node, "a");
  }
  const std::vector<region_view> all_leaving{region("a", {}, true), region("b", {}, true)};
  EXPECT_EQ(strategy->allocate(1, all_leaving)->node, "b");
  EXPECT_EQ(strategy->allocate(1, {}), std::nullopt);
}

TEST(HashModRegions, AllocatesOnlyToTheNewestVersionDuringARollingUpdate) {
  auto strategy = make_hash_mod_regions_strategy();
  // b and d run 1.10, a and c 1.9: shards alternate between b and d.
  const std::vector<region_view> mixed{
      region("a", {}, false, "1.9"), region("b", {}, false, "1.10"), region("c", {}, false, "1.9"),
      region("d", {}, false, "1.10")};
  for (shard_id s = 0; s < 8; ++s) {
    EXPECT_EQ(strategy->allocate(s, mixed)->node, s % 2 == 0 ? "b" : "d") << s;
  }
  // Not leaving comes first: a leaving member on the newest version gets nothing while others
  // stay, and of the members that stay only the newest count.
  const std::vector<region_view> newest_leaving{
      region("a", {}, false, "1"), region("b", {}, true, "2"), region("c", {}, false, "1")};
  for (shard_id s = 0; s < 4; ++s) {
    EXPECT_EQ(strategy->allocate(s, newest_leaving)->node, s % 2 == 0 ? "a" : "c") << s;
  }
  const std::vector<region_view> all_leaving{region("a", {}, true, "1"), region("b", {}, true, "2"),
                                             region("c", {}, true, "2")};
  for (shard_id s = 0; s < 4; ++s) {
    EXPECT_EQ(strategy->allocate(s, all_leaving)->node, s % 2 == 0 ? "b" : "c") << s;
  }
}

TEST(HashModRegions, RebalancesOnlyWhenNobodyLeavesAndVersionsAgree) {
  auto strategy = make_hash_mod_regions_strategy({1.0, 100});
  // Mid-update: the shards on the old version a would all move to b, nothing moves yet.
  EXPECT_TRUE(
      strategy
          ->rebalance(
              std::vector{region("a", range(0, 8), false, "1"), region("b", {}, false, "2")}, {})
          .empty());
  // While c leaves, the odd shards that belong on b wait too.
  EXPECT_TRUE(
      strategy
          ->rebalance(std::vector{region("a", range(0, 8)), region("b"), region("c", {}, true)}, {})
          .empty());
  // Once the versions agree, or the leave is over, it moves the misplaced ones.
  EXPECT_EQ(strategy->rebalance(
                std::vector{region("a", range(0, 8), false, "2"), region("b", {}, false, "2")}, {}),
            (std::vector<shard_id>{1, 3, 5, 7}));
  EXPECT_EQ(strategy->rebalance(std::vector{region("a", range(0, 8)), region("b")}, {}),
            (std::vector<shard_id>{1, 3, 5, 7}));
}

TEST(HashModRegions, RebalanceMovesMisplacedShardsWithinTheLimit) {
  auto strategy = make_hash_mod_regions_strategy({1.0, 3});
  // With a and b, even shards belong on a and odd ones on b; a holds everything.
  const std::vector<region_view> regions{region("a", range(0, 10)), region("b")};
  EXPECT_EQ(strategy->rebalance(regions, {}), (std::vector<shard_id>{1, 3, 5}));
  const std::vector<shard_id> moving{1};
  EXPECT_TRUE(strategy->rebalance(regions, moving).empty());
  const std::vector<region_view> placed{region("a", {0, 2, 4}), region("b", {1, 3})};
  EXPECT_TRUE(strategy->rebalance(placed, {}).empty());
}

TEST(LeastShards, AllocatesToNotLeavingThenNewestVersionThenFewestShards) {
  auto strategy = make_least_shards_strategy();
  // Fewest shards, ties to the lowest id.
  EXPECT_EQ(strategy->allocate(0, std::vector{region("a", {1, 2}), region("b", {3})})->node, "b");
  EXPECT_EQ(strategy->allocate(0, std::vector{region("b", {3}), region("a", {1})})->node, "a");
  // Not leaving beats fewer shards.
  EXPECT_EQ(strategy->allocate(0, std::vector{region("a", {}, true), region("b", {1, 2})})->node,
            "b");
  // A newer version beats fewer shards, but not leaving beats a newer version.
  EXPECT_EQ(strategy
                ->allocate(0, std::vector{region("a", {}, false, "1.9"),
                                          region("b", {1, 2, 3}, false, "1.10")})
                ->node,
            "b");
  EXPECT_EQ(
      strategy
          ->allocate(0, std::vector{region("a", {}, false, "1.9"), region("b", {}, true, "2.0")})
          ->node,
      "a");
  EXPECT_EQ(strategy->allocate(0, {}), std::nullopt);
}

TEST(LeastShards, PhaseOneTakesTheExcessOfRegionsAboveOptimal) {
  auto strategy = make_least_shards_strategy({1.0, 100});
  // 10 shards over 3 regions: optimal 4; a has 6 above it.
  EXPECT_EQ(
      strategy->rebalance(std::vector{region("a", range(0, 10)), region("b"), region("c")}, {}),
      range(0, 6));
  // The limit cuts it: max(1, min(int(0.1 × 10), 20)) = 1.
  auto limited = make_least_shards_strategy({0.1, 20});
  EXPECT_EQ(
      limited->rebalance(std::vector{region("a", range(0, 10)), region("b"), region("c")}, {}),
      std::vector<shard_id>{0});
}

TEST(LeastShards, PhaseTwoTakesOneFromRegionsAtOptimalWhenOthersLackMoreThanOne) {
  auto strategy = make_least_shards_strategy({1.0, 100});
  // 10 shards over 3 regions, optimal 4: nobody is above it, c lacks 4 − 1 − 2 = 1.
  const std::vector<region_view> regions{region("a", {0, 1, 2, 3}), region("b", {4, 5, 6, 7}),
                                         region("c", {8, 9})};
  EXPECT_EQ(strategy->rebalance(regions, {}), std::vector<shard_id>{0});
  // One below optimal is balanced enough.
  const std::vector<region_view> even{region("a", {0, 1, 2, 3}), region("b", {4, 5, 6}),
                                      region("c", {7, 8, 9})};
  EXPECT_TRUE(strategy->rebalance(even, {}).empty());
}

TEST(LeastShards, RebalancesOnlyWhenNothingMovesNobodyLeavesAndVersionsAgree) {
  auto strategy = make_least_shards_strategy({1.0, 100});
  const std::vector<shard_id> moving{3};
  EXPECT_TRUE(
      strategy->rebalance(std::vector{region("a", range(0, 8)), region("b")}, moving).empty());
  EXPECT_TRUE(strategy->rebalance(std::vector{region("a", range(0, 8)), region("b", {}, true)}, {})
                  .empty());
  EXPECT_TRUE(
      strategy
          ->rebalance(
              std::vector{region("a", range(0, 8), false, "1"), region("b", {}, false, "2")}, {})
          .empty());
  EXPECT_TRUE(strategy->rebalance(std::vector{region("a"), region("b")}, {}).empty());
}

// Runs rebalance rounds as the coordinator would (take the shards away, then allocate each anew
// with the same strategy) until a round moves nothing; returns the rounds that moved something.
int rounds_to_converge(allocation_strategy& strategy, std::vector<region_view> regions) {
  for (int round = 0; round < 10; ++round) {
    const auto moves = strategy.rebalance(regions, {});
    if (moves.empty()) {
      const auto [lo, hi] = std::minmax_element(
          regions.begin(), regions.end(),
          [](const auto& a, const auto& b) { return a.shards.size() < b.shards.size(); });
      EXPECT_LE(hi->shards.size() - lo->shards.size(), 1U) << "converged but uneven";
      return round;
    }
    for (auto& r : regions) {
      std::erase_if(r.shards, [&](shard_id s) {
        return std::find(moves.begin(), moves.end(), s) != moves.end();
      });
    }
    for (const auto s : moves) {
      const auto to = strategy.allocate(s, regions);
      auto it = std::find_if(regions.begin(), regions.end(),
                             [&](const auto& r) { return r.region == *to; });
      it->shards.insert(std::upper_bound(it->shards.begin(), it->shards.end(), s), s);
    }
  }
  return 10;
}

TEST(LeastShards, ConvergesInOneOrTwoRounds) {
  auto strategy = make_least_shards_strategy({1.0, 1000});
  EXPECT_LE(rounds_to_converge(*strategy, {region("a", range(0, 30)), region("b"), region("c")}),
            2);
  EXPECT_LE(rounds_to_converge(*strategy, {region("a", range(0, 11)), region("b", range(11, 22)),
                                           region("c", range(22, 32)), region("d")}),
            2);
  EXPECT_LE(rounds_to_converge(*strategy, {region("a", range(0, 64)), region("b"), region("c"),
                                           region("d"), region("e")}),
            2);
  EXPECT_LE(rounds_to_converge(*strategy, {region("a", range(0, 5)), region("b", range(5, 10)),
                                           region("c", range(10, 12)), region("d", {12})}),
            2);
}

}  // namespace
}  // namespace troupe::sharding::coordination
