// The placement seam's single-node implementation: every shard lives here, for ever.
#include <troupe/sharding/placement.hpp>

#include <gtest/gtest.h>

namespace troupe::sharding {
namespace {

TEST(SingleNodePlacement, EveryShardLivesHereAtEpochZero) {
  single_node_placement p;
  int calls = 0;
  p.set_listener([&](shard_id) { ++calls; });
  for (shard_id s : {0U, 7U, 1023U}) {
    EXPECT_EQ(p.home_of(s), shard_home{placed_here{0}});
  }
  EXPECT_EQ(calls, 0);
}

TEST(Placement, AnswersCompareByValue) {
  EXPECT_EQ(shard_home{(placed_remote{"b", 42})}, shard_home{(placed_remote{"b", 42})});
  EXPECT_NE(shard_home{(placed_remote{"b", 42})}, shard_home{(placed_remote{"b", 43})});
  EXPECT_NE(shard_home{no_home_yet{}}, shard_home{placed_here{0}});
}

}  // namespace
}  // namespace troupe::sharding
