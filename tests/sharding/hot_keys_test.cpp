// Hot keys: space-saving counters find the heaviest ids of a skewed stream in bounded memory, and
// rotating buckets forget traffic older than the window.
#include <troupe/sharding/hot_keys.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

using troupe::sharding::hot_keys;
using ranking = std::vector<std::pair<std::string, std::uint64_t>>;

/// The seed of a randomized test: TROUPE_TEST_SEED when set, else a fresh one; printed.
std::uint64_t test_seed() {
  const char* fixed = std::getenv("TROUPE_TEST_SEED");
  const std::uint64_t seed =
      fixed != nullptr ? std::strtoull(fixed, nullptr, 10) : std::random_device{}();
  std::cout << "seed " << seed << " (rerun with TROUPE_TEST_SEED=" << seed << ")\n";
  testing::Test::RecordProperty("seed", std::to_string(seed));
  return seed;
}

TEST(HotKeys, CountsExactlyWhileThereAreEnoughCounters) {
  hot_keys hot(8);
  hot.record("a");
  hot.record("b", 5);
  hot.record("a", 2);
  hot.record("c", 3);
  EXPECT_EQ(hot.top(10), (ranking{{"b", 5}, {"a", 3}, {"c", 3}}));  // ties by id
  EXPECT_EQ(hot.top(1), (ranking{{"b", 5}}));
  EXPECT_TRUE(hot.top(0).empty());
}

TEST(HotKeys, ANewIdTakesOverTheSmallestCounterAndInheritsItsCount) {
  hot_keys hot(2);
  hot.record("a", 10);
  hot.record("b", 3);
  hot.record("c", 1);  // evicts "b": 3 + 1
  EXPECT_EQ(hot.top(3), (ranking{{"a", 10}, {"c", 4}}));
}

TEST(HotKeys, IgnoresZeroCounts) {
  hot_keys hot(1);
  hot.record("a", 4);
  hot.record("b", 0);
  EXPECT_EQ(hot.top(2), (ranking{{"a", 4}}));
}

TEST(HotKeys, NamesTheTrueTopKeysOfAZipfStream) {
  const std::uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);

  // 1,000 ids, weight of the i-th proportional to 1 / (i + 1)^1.1, shuffled so that the ranking
  // does not follow the ids' names.
  constexpr int ids = 1000;
  std::vector<double> weights;
  for (int i = 0; i < ids; ++i) weights.push_back(1.0 / std::pow(i + 1, 1.1));
  std::vector<std::string> names;
  for (int i = 0; i < ids; ++i) names.push_back("user:" + std::to_string(i));
  std::shuffle(names.begin(), names.end(), rng);
  std::discrete_distribution<int> zipf(weights.begin(), weights.end());

  constexpr std::uint64_t records = 200'000;
  constexpr std::size_t counters = 64;
  hot_keys hot(counters);
  std::map<std::string, std::uint64_t> exact;
  for (std::uint64_t i = 0; i < records; ++i) {
    const std::string& id = names[static_cast<std::size_t>(zipf(rng))];
    hot.record(id);
    ++exact[id];
  }

  constexpr std::size_t k = 10;
  ranking truth(exact.begin(), exact.end());
  std::sort(truth.begin(), truth.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  std::set<std::string> true_top;
  for (std::size_t i = 0; i < k; ++i) true_top.insert(truth[i].first);

  const ranking top = hot.top(k);
  ASSERT_EQ(top.size(), k);
  std::set<std::string> found;
  for (const auto& [id, count] : top) {
    found.insert(id);
    // Space-saving never undercounts a tracked id and overcounts by at most records / counters.
    EXPECT_GE(count, exact[id]) << id;
    EXPECT_LE(count, exact[id] + records / counters) << id;
  }
  EXPECT_EQ(found, true_top);
  EXPECT_EQ(top.front().first, truth.front().first);
}

TEST(HotKeys, KeepsTheLastBucketAfterOneRotation) {
  hot_keys hot(8);
  hot.record("old", 100);
  hot.rotate();
  hot.record("new", 5);
  hot.record("old", 1);
  EXPECT_EQ(hot.top(2), (ranking{{"old", 101}, {"new", 5}}));
}

TEST(HotKeys, ForgetsAKeyHotOnlyInAnOldWindowAfterTwoRotations) {
  hot_keys hot(8);
  hot.record("burst", 1'000);
  hot.record("steady", 10);
  hot.rotate();
  hot.record("steady", 10);
  EXPECT_EQ(hot.top(1), (ranking{{"burst", 1'000}}));
  hot.rotate();
  hot.record("steady", 10);
  EXPECT_EQ(hot.top(5), (ranking{{"steady", 20}}));
  hot.rotate();
  hot.rotate();
  EXPECT_TRUE(hot.top(5).empty());
}

TEST(HotKeys, SlidesOverAsManyBucketsAsConfigured) {
  hot_keys hot(4, 3);
  hot.record("a", 7);
  hot.rotate();
  hot.rotate();
  EXPECT_EQ(hot.top(1), (ranking{{"a", 7}}));
  hot.rotate();
  EXPECT_TRUE(hot.top(1).empty());
}

}  // namespace
