// The load report's key and value: what a region writes is what the coordinator reads, and a
// value from a later version with lines this one does not know still parses.
#include "cluster/coordination/load_keys.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace troupe::cluster {
namespace {

namespace coord = sharding::coordination;

TEST(LoadKeys, AReportReadsBackAsWrittenWithRatesRounded) {
  const coord::member_id a{"node-a", 0x2a};
  const std::vector<coord::shard_load> loads{{3, 12.4}, {17, 0}, {60, 1999.6}};
  const auto key = load_key("c1", "cart", a);
  EXPECT_EQ(key, "/troupe/c1/load/cart/node-a#2a");
  const auto report = decode_load_report("c1", "cart", key, encode_loads(loads));
  ASSERT_TRUE(report);
  EXPECT_EQ(report->region, a);
  EXPECT_EQ(report->loads, (std::vector<coord::shard_load>{{3, 12}, {17, 0}, {60, 2000}}));
  EXPECT_EQ(load_region_of("c1", "cart", key), a);
}

TEST(LoadKeys, UnknownLinesAreSkippedAndOtherKeysRefused) {
  const auto report =
      decode_load_report("c1", "cart", "/troupe/c1/load/cart/b#1", "9=5\nwindow=10s\nx=1\n2=7");
  ASSERT_TRUE(report);
  EXPECT_EQ(report->loads, (std::vector<coord::shard_load>{{2, 7}, {9, 5}}));
  EXPECT_FALSE(decode_load_report("c1", "cart", "/troupe/c1/load/other/b#1", "1=1"));
  EXPECT_FALSE(decode_load_report("c1", "cart", "/troupe/c1/load/cart/no-lease", "1=1"));
  EXPECT_FALSE(load_region_of("c1", "cart", "/troupe/c1/regions/cart/b#1"));
}

}  // namespace
}  // namespace troupe::cluster
