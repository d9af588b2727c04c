// The passivation policy, driven by hand-made time points: idle entities are returned once their
// window has passed, the least recently used ones beyond the limit as soon as it is exceeded, and
// an entity already returned is not returned again until it stops or gets a new message.
#include <troupe/core/clock.hpp>
#include <troupe/sharding/passivation_policy.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::time_point;
using troupe::sharding::entity_key;
using troupe::sharding::idle_and_lru_policy;
using troupe::sharding::passivation_settings;
using keys = std::vector<entity_key>;

const time_point t0{};  // any fixed time point: the policy only compares differences

entity_key key(const char* id, troupe::sharding::shard_id shard = 0) { return {shard, id}; }

// -- entity_key ---------------------------------------------------------------------------------

TEST(EntityKey, TellsEqualIdsInDifferentShardsApart) {
  std::unordered_set<entity_key> set{key("a", 1), key("a", 2), key("a", 1)};
  EXPECT_EQ(set.size(), 2U);
  EXPECT_LT(key("b", 1), key("a", 2));  // ordered by shard, then id
  EXPECT_LT(key("a", 1), key("b", 1));
}

// -- idle ---------------------------------------------------------------------------------------

TEST(IdlePassivation, ReturnsNothingBeforeTheIdleWindowHasPassed) {
  idle_and_lru_policy policy(passivation_settings{10s, 0});
  EXPECT_TRUE(policy.entity_touched(key("a"), t0).empty());
  EXPECT_TRUE(policy.interval_passed(t0).empty());
  EXPECT_TRUE(policy.interval_passed(t0 + 9s).empty());
  EXPECT_TRUE(policy.interval_passed(t0 + 10s - 1ns).empty());
  EXPECT_EQ(policy.active(), 1U);
}

TEST(IdlePassivation, ReturnsExactlyTheEntitiesIdleForTheWindowOldestFirst) {
  idle_and_lru_policy policy(passivation_settings{10s, 0});
  (void)policy.entity_touched(key("a"), t0);
  (void)policy.entity_touched(key("b", 3), t0 + 2s);
  (void)policy.entity_touched(key("c"), t0 + 5s);
  EXPECT_EQ(policy.interval_passed(t0 + 12s), (keys{key("a"), key("b", 3)}));
  EXPECT_EQ(policy.active(), 1U);
  EXPECT_EQ(policy.passivating(), 2U);
  EXPECT_EQ(policy.interval_passed(t0 + 15s), (keys{key("c")}));
  EXPECT_EQ(policy.active(), 0U);
}

TEST(IdlePassivation, TouchingAnEntityPostponesItsPassivation) {
  idle_and_lru_policy policy(passivation_settings{10s, 0});
  (void)policy.entity_touched(key("a"), t0);
  (void)policy.entity_touched(key("b"), t0);
  (void)policy.entity_touched(key("a"), t0 + 8s);
  EXPECT_EQ(policy.interval_passed(t0 + 10s), (keys{key("b")}));
  EXPECT_TRUE(policy.interval_passed(t0 + 17s).empty());
  EXPECT_EQ(policy.interval_passed(t0 + 18s), (keys{key("a")}));
}

TEST(IdlePassivation, ReturnsAnIdleEntityOnlyOnceUntilItStops) {
  idle_and_lru_policy policy(passivation_settings{10s, 0});
  (void)policy.entity_touched(key("a"), t0);
  EXPECT_EQ(policy.interval_passed(t0 + 10s), (keys{key("a")}));
  EXPECT_TRUE(policy.interval_passed(t0 + 20s).empty());  // still stopping: not again
  policy.entity_stopped(key("a"));
  EXPECT_EQ(policy.passivating(), 0U);
  EXPECT_TRUE(policy.interval_passed(t0 + 30s).empty());  // forgotten
}

TEST(IdlePassivation, AnEntityTouchedWhilePassivatingIsTrackedAgain) {
  idle_and_lru_policy policy(passivation_settings{10s, 0});
  (void)policy.entity_touched(key("a"), t0);
  EXPECT_EQ(policy.interval_passed(t0 + 10s), (keys{key("a")}));
  (void)policy.entity_touched(key("a"), t0 + 11s);
  EXPECT_EQ(policy.active(), 1U);
  EXPECT_EQ(policy.passivating(), 0U);
  EXPECT_TRUE(policy.interval_passed(t0 + 20s).empty());
  EXPECT_EQ(policy.interval_passed(t0 + 21s), (keys{key("a")}));
}

TEST(IdlePassivation, AZeroWindowSwitchesItOff) {
  idle_and_lru_policy policy(passivation_settings{0s, 0});
  for (const char* id : {"a", "b", "c"}) (void)policy.entity_touched(key(id), t0);
  EXPECT_TRUE(policy.interval_passed(t0 + 24h).empty());
  EXPECT_TRUE(policy.interval_passed(t0 + 24h * 365).empty());
  EXPECT_EQ(policy.active(), 3U);
}

TEST(IdlePassivation, DefaultsToFiveMinutesAndNoLimit) {
  const passivation_settings defaults;
  EXPECT_EQ(defaults.idle, std::chrono::minutes(5));
  EXPECT_EQ(defaults.max_entities, 0U);
}

// -- LRU limit ----------------------------------------------------------------------------------

TEST(LruPassivation, TouchingOneEntityBeyondTheLimitReturnsTheLeastRecentlyUsed) {
  idle_and_lru_policy policy(passivation_settings{0s, 3});
  EXPECT_TRUE(policy.entity_touched(key("a"), t0).empty());
  EXPECT_TRUE(policy.entity_touched(key("b"), t0 + 1s).empty());
  EXPECT_TRUE(policy.entity_touched(key("c"), t0 + 2s).empty());
  EXPECT_EQ(policy.entity_touched(key("d"), t0 + 3s), (keys{key("a")}));
  EXPECT_EQ(policy.active(), 3U);
}

TEST(LruPassivation, TouchingAnEntityAgainMakesItMostRecentlyUsed) {
  idle_and_lru_policy policy(passivation_settings{0s, 3});
  (void)policy.entity_touched(key("a"), t0);
  (void)policy.entity_touched(key("b"), t0 + 1s);
  (void)policy.entity_touched(key("c"), t0 + 2s);
  EXPECT_TRUE(policy.entity_touched(key("a"), t0 + 3s).empty());  // known: no growth
  EXPECT_EQ(policy.entity_touched(key("d"), t0 + 4s), (keys{key("b")}));
  EXPECT_EQ(policy.entity_touched(key("e"), t0 + 5s), (keys{key("c")}));
  EXPECT_EQ(policy.entity_touched(key("f"), t0 + 6s), (keys{key("a")}));
}

TEST(LruPassivation, StoppedEntitiesLeaveAndFreeTheirPlace) {
  idle_and_lru_policy policy(passivation_settings{0s, 3});
  (void)policy.entity_touched(key("a"), t0);
  (void)policy.entity_touched(key("b"), t0);
  (void)policy.entity_touched(key("c"), t0);
  policy.entity_stopped(key("b"));  // stopped on its own, e.g. it failed
  EXPECT_EQ(policy.active(), 2U);
  EXPECT_TRUE(policy.entity_touched(key("d"), t0).empty());
  EXPECT_EQ(policy.entity_touched(key("e"), t0), (keys{key("a")}));
  policy.entity_stopped(key("never-seen"));  // ignored
  EXPECT_EQ(policy.active(), 3U);
}

TEST(LruPassivation, DoesNotReturnAPassivatingEntityAgainUntilItStops) {
  idle_and_lru_policy policy(passivation_settings{0s, 2});
  (void)policy.entity_touched(key("a"), t0);
  (void)policy.entity_touched(key("b"), t0);
  EXPECT_EQ(policy.entity_touched(key("c"), t0), (keys{key("a")}));
  // "a" has not stopped yet; more traffic evicts the others, never "a" a second time.
  EXPECT_EQ(policy.entity_touched(key("d"), t0), (keys{key("b")}));
  EXPECT_EQ(policy.entity_touched(key("e"), t0), (keys{key("c")}));
  EXPECT_EQ(policy.passivating(), 3U);
  policy.entity_stopped(key("a"));
  policy.entity_stopped(key("b"));
  EXPECT_EQ(policy.passivating(), 1U);
  EXPECT_EQ(policy.active(), 2U);
}

TEST(LruPassivation, AnEntityTouchedWhilePassivatingCountsAgainstTheLimitAgain) {
  idle_and_lru_policy policy(passivation_settings{0s, 1});
  (void)policy.entity_touched(key("a"), t0);
  EXPECT_EQ(policy.entity_touched(key("b"), t0), (keys{key("a")}));
  // "a" comes back while stopping: it is active again, so the limit of 1 evicts "b".
  EXPECT_EQ(policy.entity_touched(key("a"), t0), (keys{key("b")}));
  EXPECT_EQ(policy.active(), 1U);
}

TEST(LruPassivation, AStartReportTracksAnEntityWhoseStopReportCrossedItsNextMessage) {
  idle_and_lru_policy policy(passivation_settings{0s, 2});
  (void)policy.entity_touched(key("a"), t0);
  (void)policy.entity_touched(key("b"), t0 + 1s);
  // The shard stopped "a" and said so; the region meanwhile sent "a" a message, which started
  // it again. The stop report arrives after that touch, the start report after the stop.
  (void)policy.entity_touched(key("a"), t0 + 2s);
  policy.entity_stopped(key("a"));
  EXPECT_EQ(policy.active(), 1U);
  EXPECT_TRUE(policy.entity_started(key("a"), t0 + 3s).empty());
  EXPECT_EQ(policy.active(), 2U);  // "a" runs, and counts again
  EXPECT_EQ(policy.entity_touched(key("c"), t0 + 4s), (keys{key("b")}));
}

TEST(LruPassivation, AStartReportLeavesATrackedEntityAsItIs) {
  idle_and_lru_policy policy(passivation_settings{0s, 2});
  (void)policy.entity_touched(key("a"), t0);
  (void)policy.entity_touched(key("b"), t0 + 1s);
  EXPECT_TRUE(policy.entity_started(key("a"), t0 + 2s).empty());  // not made most recent
  EXPECT_EQ(policy.entity_touched(key("c"), t0 + 3s), (keys{key("a")}));
  EXPECT_TRUE(policy.entity_started(key("a"), t0 + 4s).empty());  // passivating: stays so
  EXPECT_EQ(policy.active(), 2U);
}

TEST(LruPassivation, ZeroMeansNoLimit) {
  idle_and_lru_policy policy(passivation_settings{0s, 0});
  for (int i = 0; i < 10'000; ++i) {
    ASSERT_TRUE(policy.entity_touched(entity_key{0, std::to_string(i)}, t0).empty());
  }
  EXPECT_EQ(policy.active(), 10'000U);
}

TEST(LruPassivation, KeepsIdsOfEveryLengthExactly) {
  // Ids up to 15 bytes are kept inline, longer ones apart: both come back unchanged, and
  // recycled slots forget what they held.
  const std::string long_id(100, 'x');
  const std::string fifteen = "exactly-15-byte";
  const std::string with_nul("a\0b", 3);
  idle_and_lru_policy policy(passivation_settings{0s, 2});
  (void)policy.entity_touched(entity_key{1, long_id}, t0);
  (void)policy.entity_touched(entity_key{1, fifteen}, t0);
  EXPECT_EQ(policy.entity_touched(entity_key{1, with_nul}, t0), (keys{entity_key{1, long_id}}));
  policy.entity_stopped(entity_key{1, long_id});
  EXPECT_EQ(policy.entity_touched(entity_key{2, long_id + "y"}, t0),
            (keys{entity_key{1, fifteen}}));
  EXPECT_EQ(policy.entity_touched(entity_key{1, ""}, t0), (keys{entity_key{1, with_nul}}));
  EXPECT_EQ(policy.active(), 2U);
}

// -- both ---------------------------------------------------------------------------------------

TEST(IdleAndLruPassivation, EnforcesTheLimitOnTouchAndTheWindowOnTick) {
  idle_and_lru_policy policy(passivation_settings{10s, 2});
  (void)policy.entity_touched(key("a"), t0);
  (void)policy.entity_touched(key("b"), t0 + 1s);
  EXPECT_EQ(policy.entity_touched(key("c"), t0 + 2s), (keys{key("a")}));
  EXPECT_TRUE(policy.interval_passed(t0 + 10s).empty());  // "a" is passivating, not idle again
  EXPECT_EQ(policy.interval_passed(t0 + 11s), (keys{key("b")}));
  (void)policy.entity_touched(key("c"), t0 + 11s);
  EXPECT_TRUE(policy.entity_touched(key("d"), t0 + 12s).empty());  // b no longer counts
  EXPECT_EQ(policy.interval_passed(t0 + 22s), (keys{key("c"), key("d")}));
  EXPECT_EQ(policy.active(), 0U);
  EXPECT_EQ(policy.passivating(), 4U);
  for (const char* id : {"a", "b", "c", "d"}) policy.entity_stopped(key(id));
  EXPECT_EQ(policy.passivating(), 0U);
}

TEST(IdleAndLruPassivation, WorksThroughTheAbstractInterface) {
  std::unique_ptr<troupe::sharding::passivation_policy> policy =
      troupe::sharding::make_passivation_policy(passivation_settings{5s, 1});
  (void)policy->entity_touched(key("a"), t0);
  EXPECT_EQ(policy->entity_touched(key("b"), t0 + 1s), (keys{key("a")}));
  EXPECT_EQ(policy->interval_passed(t0 + 6s), (keys{key("b")}));
  EXPECT_EQ(policy->active(), 0U);
}

}  // namespace
