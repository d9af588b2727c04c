#pragma once
/// The hottest entity ids of a shard over a sliding window, approximately, in bounded memory.
///
/// Each bucket runs the space-saving algorithm (Metwally, Agrawal, El Abbadi 2005) with a fixed
/// number of counters: a new id takes over the counter with the smallest count and inherits that
/// count, so a count overestimates by at most that inherited amount, and every id seen more than
/// (records in the bucket) / counters times is sure to have a counter. The window slides in steps:
/// records go to the newest bucket, and rotate() drops the oldest bucket and opens an empty one.
/// With two buckets and rotate() called every window/2, top() covers between window/2 and one
/// window of traffic. Not thread-safe: one shard owns one instance.

#include <troupe/sharding/detail/id_hash.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace troupe::sharding {

/// Approximate top-k of entity ids by message count over the last few buckets.
class hot_keys {
 public:
  /// Keeps `counters` counters per bucket (at least 1) in `buckets` buckets (at least 1).
  /// top(k) is meaningful for k up to `counters`; a few times k counters make it accurate.
  explicit hot_keys(std::size_t counters, std::size_t buckets = 2);

  /// Counts `n` messages for `id` in the newest bucket.
  void record(std::string_view id, std::uint64_t n = 1);

  /// Up to `k` ids with their estimated counts summed over all buckets, by count descending, then
  /// by id. In a bucket that tracks an id, its count is at least its true count there and at most
  /// that plus the count it inherited; a bucket that has dropped the id adds nothing.
  [[nodiscard]] std::vector<std::pair<std::string, std::uint64_t>> top(std::size_t k) const;

  /// Starts a new bucket, dropping the oldest one (and everything only it counted).
  void rotate();

  /// The number of counters per bucket.
  [[nodiscard]] std::size_t counters() const { return capacity_; }

 private:
  struct counter {
    std::string id;
    std::uint64_t count = 0;
    std::uint32_t heap_at = 0;  // its place in the heap
  };

  // One space-saving summary: counters that never move (reserved up front), a binary min-heap
  // of their indices on count, and an index from id (a view of the counter's own copy) to
  // counter. Heap moves swap two integers, so record() costs O(log counters) cheap steps and at
  // most two hash lookups.
  class summary {
   public:
    void record(std::string_view id, std::uint64_t n, std::size_t capacity);
    void clear();
    [[nodiscard]] const std::vector<counter>& counters() const { return counters_; }

   private:
    void sift_down(std::uint32_t at);
    void sift_up(std::uint32_t at);
    void swap_at(std::uint32_t a, std::uint32_t b);
    [[nodiscard]] std::uint64_t count_at(std::uint32_t at) const {
      return counters_[heap_[at]].count;
    }

    std::vector<counter> counters_;
    std::vector<std::uint32_t> heap_;
    std::unordered_map<std::string_view, std::uint32_t, detail::id_hasher> index_;
  };

  std::size_t capacity_;
  std::vector<summary> buckets_;  // a ring; newest_ is the one record() fills
  std::size_t newest_ = 0;
};

}  // namespace troupe::sharding
