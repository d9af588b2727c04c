// The load-aware allocation strategy as a pure function: it spreads the shards' message rates,
// answers as least-shards while no rate is reported, honours the targets its rebalance planned,
// and follows the same leave and rolling-update rules as the others.
#include <troupe/sharding/coordination/allocation_strategy.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <random>
#include <string>
#include <utility>
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

// Zipf-like rates: shard s gets top / (s + 1), so shard 0 is the hottest.
std::vector<shard_load> zipf(shard_id shards, double top = 1000) {
  std::vector<shard_load> out;
  for (shard_id s = 0; s < shards; ++s) {
    out.push_back({s, top / static_cast<double>(s + 1)});
  }
  return out;
}

double rate(const std::vector<shard_load>& loads, shard_id shard) {
  for (const auto& l : loads) {
    if (l.shard == shard) {
      return l.per_second;
    }
  }
  return 0;
}

double load_of(const region_view& r, const std::vector<shard_load>& loads) {
  double sum = 0;
  for (const auto s : r.shards) {
    sum += rate(loads, s);
  }
  return sum;
}

// The busiest region's load over the mean region load.
double busiest_over_mean(const std::vector<region_view>& regions,
                         const std::vector<shard_load>& loads) {
  double total = 0;
  double busiest = 0;
  for (const auto& r : regions) {
    total += load_of(r, loads);
    busiest = std::max(busiest, load_of(r, loads));
  }
  return busiest / (total / static_cast<double>(regions.size()));
}

const region_view& owner_of(const std::vector<region_view>& regions, shard_id shard) {
  return *std::find_if(regions.begin(), regions.end(), [&](const auto& r) {
    return std::binary_search(r.shards.begin(), r.shards.end(), shard);
  });
}

// One rebalance round as the coordinator runs it: for each shard named, in order, the shard is
// taken off its owner, allocate() picks a home on that view (which holds the earlier picks),
// and the shard is added there. Returns the shards named.
std::vector<shard_id> run_round(allocation_strategy& strategy, std::vector<region_view>& regions) {
  const auto moves = strategy.rebalance(regions, {});
  for (const auto s : moves) {
    for (auto& r : regions) {
      std::erase(r.shards, s);
    }
    const auto to = strategy.allocate(s, regions);
    auto it = std::find_if(regions.begin(), regions.end(),
                           [&](const auto& r) { return to && r.region == *to; });
    EXPECT_NE(it, regions.end()) << "allocate answered a region outside the view";
    if (it == regions.end()) {
      return moves;
    }
    it->shards.insert(std::upper_bound(it->shards.begin(), it->shards.end(), s), s);
  }
  return moves;
}

struct converged {
  int rounds = 0;         // rounds that moved something
  std::size_t moved = 0;  // shards moved in all
};

// Runs rounds until one moves nothing (at most 20, which counts as not converging).
converged converge(allocation_strategy& strategy, std::vector<region_view>& regions) {
  converged out;
  for (; out.rounds < 20; ++out.rounds) {
    const auto moves = run_round(strategy, regions);
    if (moves.empty()) {
      break;
    }
    out.moved += moves.size();
  }
  return out;
}

// 64 shards with Zipf rates, the 22 hottest on a: the layout a count-based strategy calls even.
std::vector<region_view> zipf_on_three() {
  return {region("a", range(0, 22)), region("b", range(22, 43)), region("c", range(43, 64))};
}

TEST(LoadAware, SpreadsZipfLoadsOverThreeThenFourRegions) {
  const auto loads = zipf(64);
  auto strategy = make_load_aware_strategy();
  strategy->observe_load(loads);
  auto regions = zipf_on_three();
  ASSERT_GT(busiest_over_mean(regions, loads), 2.0) << "the test starts skewed";

  const auto three = converge(*strategy, regions);
  EXPECT_LE(three.rounds, 2);
  EXPECT_LE(busiest_over_mean(regions, loads), 1.3);

  regions.push_back(region("d"));
  const auto four = converge(*strategy, regions);
  EXPECT_LE(four.rounds, 2);
  EXPECT_LE(busiest_over_mean(regions, loads), 1.3);
  // Evening out load needs only a few well-chosen shards, not a fourth of them each time.
  EXPECT_LE(three.moved, 16U);
  EXPECT_LE(four.moved, 16U);
  // No region was left to pile up shards.
  for (const auto& r : regions) {
    EXPECT_LE(r.shards.size(), 32U) << r.region.node;
  }
}

TEST(LoadAware, LeastShardsLeavesTheSameZipfLoadsSkewed) {
  const auto loads = zipf(64);
  auto strategy = make_least_shards_strategy();
  strategy->observe_load(loads);
  auto regions = zipf_on_three();
  converge(*strategy, regions);
  EXPECT_GT(busiest_over_mean(regions, loads), 1.3);
  regions.push_back(region("d"));
  EXPECT_LT(converge(*strategy, regions).rounds, 20);
  EXPECT_GT(busiest_over_mean(regions, loads), 1.3);
}

TEST(LoadAware, MovesTheShardClosestToHalfTheGap) {
  auto strategy = make_load_aware_strategy({{1.0, 100}});
  // a 250/s, b 50/s: half the gap is 100, so shard 1 (60/s) goes, not shard 0 (150/s), which
  // is below the gap too but would leave b at 200/s; then a 190/s, b 110/s: shard 2 (40/s).
  strategy->observe_load(std::vector<shard_load>{{0, 150}, {1, 60}, {2, 40}, {4, 50}});
  EXPECT_EQ(strategy->rebalance(std::vector{region("a", {0, 1, 2}), region("b", {4})}, {}),
            (std::vector<shard_id>{1, 2}));
  // 30/s and 70/s are both 20 from half the gap: the lower shard id goes.
  strategy->observe_load(std::vector<shard_load>{{3, 30}, {5, 70}});
  EXPECT_EQ(strategy->rebalance(std::vector{region("a", {3, 5}), region("b")}, {}),
            std::vector<shard_id>{3});
  // A shard as hot as the gap would only swap the roles: nothing moves.
  strategy->observe_load(std::vector<shard_load>{{0, 100}, {1, 0}});
  EXPECT_TRUE(strategy->rebalance(std::vector{region("a", {0}), region("b", {1})}, {}).empty());
}

TEST(LoadAware, AShardHotterThanTheMeanEndsAloneAndRoundsStop) {
  // Shard 0 carries 1000/s, the 19 others 10/s each: the mean of 4 regions is under 300.
  std::vector<shard_load> loads{{0, 1000}};
  for (shard_id s = 1; s < 20; ++s) {
    loads.push_back({s, 10});
  }
  auto strategy = make_load_aware_strategy();
  strategy->observe_load(loads);
  std::vector<region_view> regions{region("a", range(0, 5)), region("b", range(5, 10)),
                                   region("c", range(10, 15)), region("d", range(15, 20))};
  const auto result = converge(*strategy, regions);
  EXPECT_LT(result.rounds, 20);
  EXPECT_EQ(owner_of(regions, 0).shards, std::vector<shard_id>{0});
  // The others share the rest: 19 shards of 10/s over 3 regions.
  for (const auto& r : regions) {
    if (r.region.node != owner_of(regions, 0).region.node) {
      EXPECT_GE(r.shards.size(), 6U) << r.region.node;
      EXPECT_LE(r.shards.size(), 7U) << r.region.node;
    }
  }
  // Converged: another round on the result moves nothing.
  EXPECT_TRUE(strategy->rebalance(regions, {}).empty());

  // The hot shard already alone, the rest skewed: its region cannot give, so the others even out
  // among themselves.
  std::vector<region_view> skewed{region("a", {0}), region("b", range(1, 14)),
                                  region("c", range(14, 20)), region("d")};
  EXPECT_LT(converge(*strategy, skewed).rounds, 20);
  EXPECT_EQ(skewed[0].shards, std::vector<shard_id>{0});
  for (std::size_t i = 1; i < skewed.size(); ++i) {
    EXPECT_GE(skewed[i].shards.size(), 6U) << skewed[i].region.node;
    EXPECT_LE(skewed[i].shards.size(), 7U) << skewed[i].region.node;
  }
  EXPECT_TRUE(strategy->rebalance(skewed, {}).empty());
}

TEST(LoadAware, WithoutLoadsAnswersAsLeastShards) {
  const std::vector<std::vector<region_view>> layouts{
      {region("a", range(0, 30)), region("b"), region("c")},
      {region("a", range(0, 11)), region("b", range(11, 22)), region("c", range(22, 32)),
       region("d")},
      {region("a", {0, 1, 2, 3}), region("b", {4, 5, 6, 7}), region("c", {8, 9})},
      {region("c", range(0, 64)), region("b"), region("a"), region("e"), region("d")},
      {region("a", range(0, 5)), region("b", range(5, 10)), region("c", range(10, 12)),
       region("d", {12})},
      {region("a", range(0, 8), false, "1"), region("b", {}, false, "2")},
      {region("a", range(0, 8)), region("b", {}, true)},
  };
  const std::vector<std::vector<shard_load>> no_loads{{}, {{0, 0}, {3, 0}, {40, 0}}};
  for (const auto& loads : no_loads) {
    for (const rebalance_limits limits : {rebalance_limits{}, rebalance_limits{1.0, 1000}}) {
      auto load_aware = make_load_aware_strategy({limits});
      auto least_shards = make_least_shards_strategy(limits);
      load_aware->observe_load(loads);
      for (std::size_t i = 0; i < layouts.size(); ++i) {
        EXPECT_EQ(load_aware->rebalance(layouts[i], {}), least_shards->rebalance(layouts[i], {}))
            << "layout " << i;
        for (shard_id s = 0; s < 4; ++s) {
          EXPECT_EQ(load_aware->allocate(s, layouts[i]), least_shards->allocate(s, layouts[i]))
              << "layout " << i << ", shard " << s;
        }
        auto by_load = layouts[i];
        auto by_count = layouts[i];
        converge(*load_aware, by_load);
        converge(*least_shards, by_count);
        for (std::size_t r = 0; r < by_load.size(); ++r) {
          EXPECT_EQ(by_load[r].shards, by_count[r].shards) << "layout " << i << ", region " << r;
        }
      }
    }
  }
}

TEST(LoadAware, AllocatesToTheLowestLoadAfterNotLeavingAndVersion) {
  auto strategy = make_load_aware_strategy();
  strategy->observe_load(
      std::vector<shard_load>{{1, 100}, {2, 5}, {3, 5}, {4, 5}, {5, 10}, {9, 50}});
  // Fewer shards but hotter loses to more shards but cooler.
  EXPECT_EQ(strategy->allocate(8, std::vector{region("a", {1}), region("b", {2, 3, 4})})->node,
            "b");
  // Equal loads: the fewest shards, then the lowest id.
  EXPECT_EQ(strategy->allocate(8, std::vector{region("a", {2, 3}), region("b", {5})})->node, "b");
  EXPECT_EQ(strategy->allocate(8, std::vector{region("b", {2}), region("a", {3})})->node, "a");
  // A shard without a report counts as the mean reported rate, 175 / 6 = 29.2/s: a's two
  // unreported shards weigh more than b's 50/s.
  EXPECT_EQ(strategy->allocate(8, std::vector{region("a", {20, 21}), region("b", {9})})->node, "b");
  // Not leaving, then the newest version, beat a lower load.
  EXPECT_EQ(strategy->allocate(8, std::vector{region("a", {}, true), region("b", {1})})->node, "b");
  EXPECT_EQ(strategy
                ->allocate(8, std::vector{region("a", {}, false, "1.9"),
                                          region("b", {1, 2}, false, "1.10")})
                ->node,
            "b");
  EXPECT_EQ(
      strategy
          ->allocate(8, std::vector{region("a", {1}, false, "1.9"), region("b", {}, true, "2.0")})
          ->node,
      "a");
  EXPECT_EQ(strategy->allocate(8, {}), std::nullopt);
}

TEST(LoadAware, AllocateHonoursThePlannedTargetWhileItIsOffered) {
  auto strategy = make_load_aware_strategy({{1.0, 100}});
  strategy->observe_load(
      std::vector<shard_load>{{0, 100}, {1, 60}, {2, 40}, {3, 30}, {4, 10}, {5, 20}});
  // a carries 230/s, b 10/s, c 20/s. The plan: shard 0 (100/s, the closest to half of the gap
  // of 220) to b; then shard 1 (60/s, half of 110 is 55) to c; then shard 4 (10/s) from b to a.
  const std::vector<region_view> regions{region("a", {0, 1, 2, 3}), region("b", {4}),
                                         region("c", {5})};
  EXPECT_EQ(strategy->rebalance(regions, {}), (std::vector<shard_id>{0, 1, 4}));
  // Offered a view where b is the busiest, allocate still answers the plan.
  const std::vector<region_view> b_busy{region("a", {2, 3}), region("b", {1, 4, 5}), region("c")};
  EXPECT_EQ(strategy->allocate(0, b_busy)->node, "b");
  EXPECT_EQ(strategy->allocate(1, b_busy)->node, "c");
  // Without b, shard 0 falls back to the order: the lowest load, c.
  EXPECT_EQ(strategy->allocate(0, std::vector{region("a", {1, 2, 3}), region("c", {5})})->node,
            "c");
  // A target that started leaving, or a newer version that joined, overrides the plan.
  EXPECT_EQ(strategy->allocate(0, std::vector{region("b", {4}, true), region("c", {5})})->node,
            "c");
  EXPECT_EQ(strategy
                ->allocate(0, std::vector{region("b", {4}, false, "1"),
                                          region("c", {1, 2, 3, 5}, false, "2")})
                ->node,
            "c");
  // The next rebalance forgets the plan. On the planned layout it plans nothing: b's only
  // shard is hotter than any gap, and a and c carry 80/s each.
  const std::vector<region_view> planned{region("a", {2, 3, 4}), region("b", {0}),
                                         region("c", {1, 5})};
  EXPECT_TRUE(strategy->rebalance(planned, {}).empty());
  EXPECT_EQ(strategy->allocate(0, b_busy)->node, "c");
}

TEST(LoadAware, RebalancesOnlyWhenNothingMovesNobodyLeavesAndVersionsAgree) {
  auto strategy = make_load_aware_strategy({{1.0, 100}});
  strategy->observe_load(zipf(8));
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
  EXPECT_TRUE(strategy->rebalance(std::vector<region_view>{}, {}).empty());
  EXPECT_TRUE(strategy->rebalance(std::vector{region("a"), region("b")}, {}).empty());
  // The same view with one version and nobody leaving does move.
  EXPECT_FALSE(strategy->rebalance(std::vector{region("a", range(0, 8)), region("b")}, {}).empty());
}

TEST(LoadAware, MovesAtMostTheRebalanceLimit) {
  // Every shard on a, 64 equal rates: evening out wants many moves.
  std::vector<shard_load> loads;
  for (shard_id s = 0; s < 64; ++s) {
    loads.push_back({s, 10});
  }
  const std::vector<region_view> regions{region("a", range(0, 64)), region("b"), region("c")};
  auto limited = make_load_aware_strategy({{0.1, 20}});
  limited->observe_load(loads);
  EXPECT_EQ(limited->rebalance(regions, {}).size(), 6U);  // int(0.1 × 64)
  auto absolute = make_load_aware_strategy({{1.0, 5}});
  absolute->observe_load(loads);
  EXPECT_EQ(absolute->rebalance(regions, {}).size(), 5U);
  auto by_default = make_load_aware_strategy();
  by_default->observe_load(loads);
  EXPECT_EQ(by_default->rebalance(regions, {}).size(), 19U);  // int(0.3 × 64)
}

TEST(LoadAware, NeverPlansMoreThanTwiceTheEvenShareOfShardsOnOneRegion) {
  // a holds two hot shards; b holds 18 idle ones, c none. b and c are equally cold and b comes
  // first by id, but b already holds more than 2 × ceil(20 / 3) = 14 shards: the hot shard goes
  // to c.
  std::vector<shard_load> loads{{0, 100}, {1, 100}};
  for (shard_id s = 2; s < 20; ++s) {
    loads.push_back({s, 0});
  }
  auto strategy = make_load_aware_strategy({{1.0, 100}});
  strategy->observe_load(loads);
  std::vector<region_view> regions{region("a", {0, 1}), region("b", range(2, 20)), region("c")};
  EXPECT_EQ(converge(*strategy, regions).moved, 1U);
  EXPECT_EQ(regions[0].shards, std::vector<shard_id>{1});
  EXPECT_EQ(regions[1].shards, range(2, 20));
  EXPECT_EQ(regions[2].shards, std::vector<shard_id>{0});
}

TEST(LoadAware, IsDeterministicWhateverTheOrderOfRegions) {
  // Zipf rates, and equal rates where regions tie on load (b and c are both empty).
  std::vector<shard_load> equal;
  for (shard_id s = 0; s < 12; ++s) {
    equal.push_back({s, 10});
  }
  const std::vector<std::pair<std::vector<shard_load>, std::vector<region_view>>> cases{
      {zipf(64),
       {region("a", range(0, 22)), region("b", range(22, 43)), region("c", range(43, 64)),
        region("d")}},
      {equal, {region("a", range(0, 8)), region("b"), region("c"), region("d", range(8, 12))}},
  };
  for (const auto& [loads, abcd] : cases) {
    const std::vector<region_view> dbca{abcd[3], abcd[1], abcd[2], abcd[0]};
    auto first = make_load_aware_strategy();
    auto second = make_load_aware_strategy();
    first->observe_load(loads);
    second->observe_load(loads);
    const auto moves = first->rebalance(abcd, {});
    ASSERT_FALSE(moves.empty());
    EXPECT_EQ(second->rebalance(dbca, {}), moves);
    EXPECT_EQ(first->rebalance(abcd, {}), moves) << "the same input, the same answer";
    // Each pick as the coordinator makes them, on both orders.
    auto by_abcd = abcd;
    auto by_dbca = dbca;
    for (const auto s : moves) {
      for (auto* view : {&by_abcd, &by_dbca}) {
        for (auto& r : *view) {
          std::erase(r.shards, s);
        }
      }
      const auto to = first->allocate(s, by_abcd);
      EXPECT_EQ(second->allocate(s, by_dbca), to) << s;
      for (auto* view : {&by_abcd, &by_dbca}) {
        for (auto& r : *view) {
          if (to && r.region == *to) {
            r.shards.insert(std::upper_bound(r.shards.begin(), r.shards.end(), s), s);
          }
        }
      }
    }
    // The whole run ends in the same layout.
    converge(*first, by_abcd);
    converge(*second, by_dbca);
    for (const auto& r : by_abcd) {
      EXPECT_EQ(r.shards, (*std::find_if(by_dbca.begin(), by_dbca.end(),
                                         [&](const auto& o) { return o.region == r.region; }))
                              .shards)
          << r.region.node;
    }
  }
}

double sum_of_squares(const std::vector<region_view>& regions,
                      const std::vector<shard_load>& loads) {
  double sum = 0;
  for (const auto& r : regions) {
    sum += load_of(r, loads) * load_of(r, loads);
  }
  return sum;
}

TEST(LoadAware, EveryRoundEvensOutRandomLayoutsAndRoundsStop) {
  std::mt19937 random(7);  // std::mt19937's sequence is fixed by the standard
  for (int layout = 0; layout < 300; ++layout) {
    const auto region_count = 2 + random() % 5;
    const auto shard_count = 1 + random() % 48;
    std::vector<region_view> regions;
    for (std::size_t r = 0; r < region_count; ++r) {
      regions.push_back(region(std::string(1, static_cast<char>('a' + r))));
    }
    // Every shard reported (the sums above count unreported ones as 0); a few idle, a few hot.
    std::vector<shard_load> loads;
    for (shard_id s = 0; s < shard_count; ++s) {
      const auto skewed_owner = random() % 4 == 0 ? 0 : random() % region_count;
      regions[skewed_owner].shards.push_back(s);
      const auto kind = random() % 10;
      loads.push_back({s, kind == 0   ? 0.0
                          : kind == 1 ? 500.0
                                      : static_cast<double>(random() % 100)});
    }
    auto strategy = make_load_aware_strategy({{0.5, 10}});
    strategy->observe_load(loads);
    const auto most_shards = 2 * ((shard_count + region_count - 1) / region_count);
    int round = 0;
    for (; round < 50; ++round) {
      const auto before = regions;
      const auto moves = run_round(*strategy, regions);
      if (moves.empty()) {
        break;
      }
      auto unique = moves;
      std::sort(unique.begin(), unique.end());
      EXPECT_EQ(std::adjacent_find(unique.begin(), unique.end()), unique.end())
          << "layout " << layout << ": a shard named twice";
      EXPECT_LE(moves.size(), rebalance_limit({0.5, 10}, shard_count));
      EXPECT_LT(sum_of_squares(regions, loads), sum_of_squares(before, loads))
          << "layout " << layout << ", round " << round;
      for (std::size_t r = 0; r < regions.size(); ++r) {
        if (regions[r].shards.size() > before[r].shards.size()) {
          EXPECT_LE(regions[r].shards.size(), most_shards) << "layout " << layout;
        }
      }
    }
    EXPECT_LT(round, 50) << "layout " << layout << " never settles";
  }
}

}  // namespace
}  // namespace troupe::sharding::coordination
