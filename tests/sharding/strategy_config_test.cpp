// The allocation strategy a node's file names (troupe.sharding.allocation-strategy and the
// rebalance limits): each name gives its strategy, the limits bound a round, a bad value fails
// naming the key and its line, and starting a type checks the keys before any cluster exists.
#include <troupe/core/actor_system.hpp>
#include <troupe/core/config.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/sharding/coordination/strategy_config.hpp>

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

namespace troupe::sharding::coordination {
namespace {

std::unique_ptr<allocation_strategy> from(const std::string& hocon) {
  return strategy_from_config(config::parse_string(hocon, "node.conf"));
}

region_view region(std::string node, std::vector<shard_id> shards) {
  return region_view{member_id{std::move(node), 1}, false, {}, std::move(shards)};
}

std::vector<shard_id> range(shard_id from, shard_id to) {
  std::vector<shard_id> out(to - from);
  std::iota(out.begin(), out.end(), from);
  return out;
}

/// Where each strategy puts shard 0 beside a (shard 1, hot) and b (shards 2 and 3, cold):
/// hash mod regions by number (0 mod 2: a), least shards by count (a), load-aware by load (b).
std::string home_of_shard_0(allocation_strategy& s) {
  const std::vector<region_view> regions{region("a", {1}), region("b", {2, 3})};
  const std::vector<shard_load> loads{{1, 100.0}, {2, 1.0}, {3, 1.0}};
  s.observe_load(loads);
  return s.allocate(0, regions).value().node;
}

/// Where least-shards and hash mod regions part: a holds shards 1 and 2, b none; shard 4 is
/// number 0 mod 2 (a) for the hash, b for the fewest shards.
std::string home_of_shard_4(allocation_strategy& s) {
  const std::vector<region_view> regions{region("a", {1, 2}), region("b", {})};
  return s.allocate(4, regions).value().node;
}

TEST(StrategyConfig, TheDefaultIsHashModRegionsAndEachNameGivesItsStrategy) {
  EXPECT_EQ(home_of_shard_4(*from("")), "a");
  EXPECT_EQ(home_of_shard_4(*from("troupe.sharding.allocation-strategy = hash-mod-regions")), "a");
  EXPECT_EQ(home_of_shard_4(*from("troupe.sharding.allocation-strategy = least-shards")), "b");
  EXPECT_EQ(home_of_shard_0(*from("troupe.sharding.allocation-strategy = least-shards")), "a");
  EXPECT_EQ(home_of_shard_0(*from("troupe.sharding.allocation-strategy = load-aware")), "b");
}

TEST(StrategyConfig, TheLimitsBoundWhatOneRoundMoves) {
  // a holds 100 shards, b none: least-shards wants 50 moved.
  const std::vector<region_view> regions{region("a", range(0, 100)), region("b", {})};
  auto moved = [&](const std::string& hocon) {
    return from("troupe.sharding { allocation-strategy = least-shards\n" + hocon + " }")
        ->rebalance(regions, {})
        .size();
  };
  EXPECT_EQ(moved(""), 20U);  // min(0.3 × 100, 20)
  EXPECT_EQ(moved("rebalance-absolute-limit = 5"), 5U);
  EXPECT_EQ(moved("rebalance-relative-limit = 0.1"), 10U);
  EXPECT_EQ(moved("rebalance-relative-limit = 1.0\nrebalance-absolute-limit = 1000"), 50U);
  EXPECT_EQ(moved("rebalance-relative-limit = 0.001"), 1U);  // at least one
}

TEST(StrategyConfig, AValueOutOfRangeOrAnUnknownNameFailsNamingTheKeyAndLine) {
  for (const auto& [hocon, key] : std::vector<std::pair<std::string, std::string>>{
           {"troupe.sharding.rebalance-relative-limit = 0", "rebalance-relative-limit"},
           {"troupe.sharding.rebalance-relative-limit = 1.5", "rebalance-relative-limit"},
           {"troupe.sharding.rebalance-absolute-limit = 0", "rebalance-absolute-limit"},
           {"troupe.sharding.rebalance-absolute-limit = lots", "rebalance-absolute-limit"},
           {"troupe.sharding.allocation-strategy = round-robin", "allocation-strategy"}}) {
    try {
      (void)from("\n" + hocon);
      ADD_FAILURE() << "no error for " << hocon;
    } catch (const config_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(key), std::string::npos) << what;
      EXPECT_NE(what.find("node.conf"), std::string::npos) << what;
    }
  }
}

struct where {
  std::string id;
};

class locator final : public actor<where> {
 public:
  static inline const auto shard =
      shard_key<where>::of("locator", [](const where& w) { return w.id; });

 private:
  void receive(where& /*unused*/) override {}
};

TEST(StrategyConfig, StartingATypeChecksTheKeysBeforeAnyClusterUsesThem) {
  actor_system bad(system_config{}.with_workers(1).with_config(
      config::parse_string("troupe.sharding.allocation-strategy = busiest", "node.conf")));
  EXPECT_THROW((void)cluster_sharding::get(bad).start<locator>(), config_error);

  actor_system good(system_config{}.with_workers(1).with_config(config::parse_string(
      "troupe.sharding { allocation-strategy = least-shards, rebalance-absolute-limit = 64 }",
      "node.conf")));
  EXPECT_NO_THROW((void)cluster_sharding::get(good).start<locator>());
}

}  // namespace
}  // namespace troupe::sharding::coordination
