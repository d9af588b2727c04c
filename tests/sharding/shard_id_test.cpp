// shard_of: zlib's crc32 of the id's bytes modulo the number of shards, so every process on every
// platform routes an id to the same shard.
#include <troupe/core/errc.hpp>
#include <troupe/sharding/shard_id.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using troupe::sharding::shard_of;

TEST(ShardOf, MatchesTheSpecsTestVector) { EXPECT_EQ(shard_of("user:42", 16), 6U); }

TEST(ShardOf, IsZlibCrc32ModuloTheShardCount) {
  // Values from Python's zlib.crc32, an independent implementation of the same checksum: a
  // change here would move entities between shards in a running cluster.
  EXPECT_EQ(shard_of("", 64), 0U);
  EXPECT_EQ(shard_of("a", 64), 3U);
  EXPECT_EQ(shard_of("a", 1000), 907U);
  EXPECT_EQ(shard_of("cart-1", 64), 36U);
  EXPECT_EQ(shard_of("user:42", 1000), 558U);
  EXPECT_EQ(shard_of("order/2024/17", 1000), 987U);
  EXPECT_EQ(shard_of("order/2024/17", 0xFFFFFFFFU), 362377987U);
}

TEST(ShardOf, ShortAndLongIdsHashTheSame) {
  // Ids up to 64 bytes take a byte loop, longer ones zlib's word loop: both are CRC-32.
  EXPECT_EQ(shard_of(std::string(64, 'x'), 0xFFFFFFFFU), 986885138U);
  EXPECT_EQ(shard_of(std::string(65, 'x'), 0xFFFFFFFFU), 2136978791U);
  EXPECT_EQ(shard_of(std::string(63, 'k') + "\xC3\xA9", 0xFFFFFFFFU), 1580746851U);
  std::string device = "device-";
  for (int i = 0; i < 7; ++i) device += "0123456789";
  EXPECT_EQ(shard_of(device, 0xFFFFFFFFU), 3195820687U);
}

TEST(ShardOf, HashesTheUtf8BytesOfNonAsciiIds) {
  EXPECT_EQ(shard_of("caf\xC3\xA9", 64), 53U);  // "café"
  EXPECT_EQ(shard_of("caf\xC3\xA9", 1000), 637U);
}

TEST(ShardOf, GivesTheSameShardEveryTime) {
  const std::string id = "device-7f3a";
  const auto first = shard_of(id, 64);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(shard_of(std::string(id), 64), first);
}

TEST(ShardOf, StaysBelowTheShardCountAndUsesEveryShard) {
  for (const std::uint32_t shards : {1U, 2U, 7U, 64U, 1000U}) {
    std::vector<int> hits(shards, 0);
    for (int i = 0; i < 20'000; ++i) {
      const auto shard = shard_of("entity-" + std::to_string(i), shards);
      ASSERT_LT(shard, shards);
      ++hits[shard];
    }
    for (std::uint32_t s = 0; s < shards; ++s) EXPECT_GT(hits[s], 0) << "shard " << s;
  }
}

TEST(ShardOf, PutsEverythingInShardZeroWhenThereIsOneShard) {
  EXPECT_EQ(shard_of("anything", 1), 0U);
}

TEST(ShardOf, RejectsZeroShardsAsInvalidConfig) {
  try {
    (void)shard_of("user:42", 0);
    FAIL() << "expected troupe::error";
  } catch (const troupe::error& e) {
    EXPECT_EQ(e.value(), troupe::errc::invalid_config);
  }
}

TEST(ShardOf, DefaultsToSixtyFourShards) {
  EXPECT_EQ(troupe::sharding::default_number_of_shards, 64U);
}

}  // namespace
