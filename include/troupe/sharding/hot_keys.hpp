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
  };

  // One space-saving summary: counters in a binary min-heap on count, plus an index from id to
  // heap position, so record() costs O(log counters).
  class summary {
   public:
    void record(std::string_view id, std::uint64_t n, std::size_t capacity);
    void clear();
    [[nodiscard]] const std::vector<counter>& counters() const { return heap_; }

   private:
    void sift_down(std::size_t i);
    void sift_up(std::size_t i);
    void swap_at(std::size_t a, std::size_t b);

    // Transparent, so record() looks an id up without copying it into a std::string.
    struct id_hash {
      using is_transparent = void;
      [[nodiscard]] std::size_t operator()(std::string_view id) const noexcept {
        return std::hash<std::string_view>{}(id);
      }
    };

    std::vector<counter> heap_;
    std::unordered_map<std::string, std::size_t, id_hash, std::equal_to<>> position_;
  };

  std::size_t capacity_;
  std::vector<summary> buckets_;  // a ring; newest_ is the one record() fills
  std::size_t newest_ = 0;
};

}  // namespace troupe::sharding
