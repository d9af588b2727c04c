// The workload generator of troupe_bench_seed: deterministic, in range, and equal to the figures
// issue 4 quotes for seed 42 (so that other implementations replay the same key sequence).

#include "seed_workload.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace {

using namespace troupe::bench::seed;

workload_spec spec(std::int64_t messages, std::int64_t keys, distribution dist) {
  workload_spec s;
  s.messages = messages;
  s.keys = keys;
  s.dist = dist;
  return s;
}

std::int64_t busiest(const std::vector<std::int64_t>& counts) {
  return *std::max_element(counts.begin(), counts.end());
}

TEST(SeedWorkload, Splitmix64MatchesTheReferenceOutputs) {
  // The first outputs of splitmix64 seeded with 1234567 (Vigna's reference implementation).
  splitmix64 rng(1234567);
  EXPECT_EQ(rng.next(), 6457827717110365317ULL);
  EXPECT_EQ(rng.next(), 3203168211198807973ULL);
  EXPECT_EQ(rng.next(), 9817491932198370423ULL);
}

TEST(SeedWorkload, TheSameSeedGivesTheSameSequence) {
  for (const auto dist : {distribution::uniform, distribution::zipf}) {
    const auto a = generate_keys(spec(5'000, 300, dist));
    const auto b = generate_keys(spec(5'000, 300, dist));
    EXPECT_EQ(a, b);
    EXPECT_EQ(workload_crc32(a), workload_crc32(b));
    auto other = spec(5'000, 300, dist);
    other.seed = 43;
    EXPECT_NE(generate_keys(other), a);
  }
}

TEST(SeedWorkload, IndicesStayWithinTheKeys) {
  for (const auto dist : {distribution::uniform, distribution::zipf}) {
    for (const std::int64_t keys : {1, 2, 7, 1000}) {
      const auto seq = generate_keys(spec(20'000, keys, dist));
      ASSERT_EQ(seq.size(), 20'000u);
      EXPECT_LT(*std::max_element(seq.begin(), seq.end()), keys);
    }
  }
  // Uniform over 10 keys reaches every key; Zipf's rank 1 (k0) is the hottest.
  const auto uniform = per_key_counts(generate_keys(spec(10'000, 10, distribution::uniform)), 10);
  EXPECT_GT(*std::min_element(uniform.begin(), uniform.end()), 0);
  const auto zipf = per_key_counts(generate_keys(spec(10'000, 1000, distribution::zipf)), 1000);
  EXPECT_EQ(std::max_element(zipf.begin(), zipf.end()) - zipf.begin(), 0);
}

TEST(SeedWorkload, UniformBusiestKeyGets21MessagesAsIssue4Says) {
  const auto keys = generate_keys(spec(10'000, 1'000, distribution::uniform));
  EXPECT_EQ(busiest(per_key_counts(keys, 1'000)), 21);
}

TEST(SeedWorkload, ScaledZipfHottestKeyGets134587MessagesAsIssue4Says) {
  const auto keys = generate_keys(spec(1'000'000, 100'000, distribution::zipf));
  const auto counts = per_key_counts(keys, 100'000);
  EXPECT_EQ(counts[0], 134'587);
  EXPECT_EQ(busiest(counts), 134'587);
}

TEST(SeedWorkload, Crc32MatchesAnIndependentPythonReplayOfIssue4) {
  // The same definition written in Python (zlib.crc32, bisect.bisect_right, r ** -s) gives these.
  EXPECT_EQ(workload_crc32(generate_keys(spec(10'000, 1'000, distribution::uniform))), 1105559481U);
  EXPECT_EQ(workload_crc32(generate_keys(spec(10'000, 1'000, distribution::zipf))), 3889544145U);
}

TEST(SeedWorkload, Crc32CoversTheIndicesAsLittleEndianWords) {
  // crc32 of the bytes 01 00 00 00 02 00 00 00 (zlib: 0x0381177c).
  EXPECT_EQ(workload_crc32({1, 2}), 0x0381177cU);
  EXPECT_EQ(workload_crc32({}), 0U);
}

TEST(SeedWorkload, ShardsFollowZlibCrc32AsInTheDesign) {
  EXPECT_EQ(shard_of_key("user:42", 16), 6U);
  const std::vector<std::int64_t> counts = {5, 3, 2};
  const auto shards = per_shard_counts(counts, 1);
  EXPECT_EQ(shards, std::vector<std::int64_t>{10});
}

TEST(SeedWorkload, TheBoundCountsSerialWrites) {
  EXPECT_EQ(serial_writes(21, 0), 21);
  EXPECT_EQ(serial_writes(134'587, 200), 673);
  EXPECT_DOUBLE_EQ(bound_msgs_per_s(10'000, 21, 0, 1.0), 10'000 / 0.021);
  EXPECT_DOUBLE_EQ(bound_msgs_per_s(1'000'000, 134'587, 200, 1.0), 1'000'000 / 0.673);
}

}  // namespace
