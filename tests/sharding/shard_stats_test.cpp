// Per-shard counters: batch sizes land in power-of-two buckets, peaks only rise.
#include <troupe/sharding/shard_stats.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>

namespace {

using namespace std::chrono_literals;
using troupe::sharding::batch_size_histogram;
using troupe::sharding::shard_stats;

TEST(BatchSizeHistogram, PutsEachSizeInItsPowerOfTwoBucket) {
  EXPECT_EQ(batch_size_histogram::bucket_of(1), 0U);
  EXPECT_EQ(batch_size_histogram::bucket_of(2), 1U);
  EXPECT_EQ(batch_size_histogram::bucket_of(3), 1U);
  EXPECT_EQ(batch_size_histogram::bucket_of(4), 2U);
  EXPECT_EQ(batch_size_histogram::bucket_of(255), 7U);
  EXPECT_EQ(batch_size_histogram::bucket_of(256), 8U);
  EXPECT_EQ(batch_size_histogram::bucket_of(100'000), 8U);
  for (std::size_t i = 0; i < batch_size_histogram::bucket_count; ++i) {
    EXPECT_EQ(batch_size_histogram::bucket_of(batch_size_histogram::lower_bound(i)), i);
  }
}

TEST(BatchSizeHistogram, CountsRecordedBatchesButNotEmptyOnes) {
  batch_size_histogram h;
  for (const std::size_t size : {1U, 1U, 3U, 256U, 1000U, 0U}) h.record(size);
  EXPECT_EQ(h.counts[0], 2U);
  EXPECT_EQ(h.counts[1], 1U);
  EXPECT_EQ(h.counts[8], 2U);
  EXPECT_EQ(h.total(), 5U);
}

TEST(ShardStats, KeepsThePeakMailboxDepthAndTheLongestQueueWait) {
  shard_stats stats;
  stats.observe_mailbox_depth(5);
  stats.observe_mailbox_depth(2);
  EXPECT_EQ(stats.mailbox_depth, 2U);
  EXPECT_EQ(stats.mailbox_depth_peak, 5U);
  stats.observe_queue_wait(3ms);
  stats.observe_queue_wait(1ms);
  EXPECT_EQ(stats.max_queue_wait, 3ms);
  EXPECT_EQ(stats.messages_processed, 0U);
}

}  // namespace
