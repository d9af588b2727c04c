// troupe_bench_seed's measurement over several runs: a row cut short by the repeat budget (the
// table's 10 s rule) says so in its JSON line; a row that ran every run does not.

#include "seed_measure.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace {

using namespace troupe::bench::seed;

workload_spec small_spec() {
  workload_spec spec;
  spec.messages = 200;
  spec.keys = 10;
  return spec;
}

run_config small_config() {
  run_config c;
  c.how = mode::shard_actors;
  c.shards = 4;
  c.io_ms = 0.1;
  c.workers = 2;
  return c;
}

TEST(SeedMeasure, ARowCutShortByTheRepeatBudgetSaysSo) {
  // Any run takes longer than a nanosecond: the budget stops the row after its first run.
  const measurement m = measure(small_spec(), small_config(), 3, 1e-9);
  ASSERT_EQ(m.error, "");
  EXPECT_EQ(m.runs.size(), 1U);
  EXPECT_TRUE(cut_short(m));
  const std::string json = json_line(m);
  EXPECT_NE(json.find("\"runs_asked\":3"), std::string::npos) << json;
  EXPECT_NE(json.find("\"repeat\":\"1 of 3 runs"), std::string::npos) << json;
}

TEST(SeedMeasure, ARowThatRanEveryRunSaysNothingMore) {
  const measurement m = measure(small_spec(), small_config(), 2);
  ASSERT_EQ(m.error, "");
  EXPECT_EQ(m.runs.size(), 2U);
  EXPECT_FALSE(cut_short(m));
  const std::string json = json_line(m);
  EXPECT_NE(json.find("\"runs_asked\":2"), std::string::npos) << json;
  EXPECT_EQ(json.find("\"repeat\""), std::string::npos) << json;
}

TEST(SeedMeasure, ReportsTheWorstRunBesideTheMedian) {
  const measurement m = measure(small_spec(), small_config(), 3);
  ASSERT_EQ(m.error, "");
  ASSERT_EQ(m.runs.size(), 3U);
  double slowest = m.runs.front();
  for (const double r : m.runs) slowest = std::min(slowest, r);
  EXPECT_EQ(m.worst, slowest);
  EXPECT_LE(m.worst, m.msgs_per_s);
  const std::string json = json_line(m);
  EXPECT_NE(json.find("\"worst\":"), std::string::npos) << json;
}

}  // namespace
