#include "troupe/sharding/hot_keys.hpp"

#include <algorithm>

namespace troupe::sharding {

hot_keys::hot_keys(std::size_t counters, std::size_t buckets)
    : capacity_(std::max<std::size_t>(counters, 1)), buckets_(std::max<std::size_t>(buckets, 1)) {}

void hot_keys::record(std::string_view id, std::uint64_t n) {
  if (n == 0) return;
  buckets_[newest_].record(id, n, capacity_);
}

std::vector<std::pair<std::string, std::uint64_t>> hot_keys::top(std::size_t k) const {
  std::unordered_map<std::string_view, std::uint64_t> merged;
  for (const summary& bucket : buckets_) {
    for (const counter& c : bucket.counters()) merged[c.id] += c.count;
  }
  std::vector<std::pair<std::string, std::uint64_t>> ranked;
  ranked.reserve(merged.size());
  for (const auto& [id, count] : merged) ranked.emplace_back(std::string(id), count);
  const auto hotter = [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  };
  const std::size_t keep = std::min(k, ranked.size());
  std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(keep),
                    ranked.end(), hotter);
  ranked.resize(keep);
  return ranked;
}

void hot_keys::rotate() {
  newest_ = (newest_ + 1) % buckets_.size();
  buckets_[newest_].clear();
}

// -- summary ------------------------------------------------------------------------------------

void hot_keys::summary::record(std::string_view id, std::uint64_t n, std::size_t capacity) {
  if (const auto it = index_.find(id); it != index_.end()) {
    counter& c = counters_[it->second];
    c.count += n;
    sift_down(c.heap_at);
    return;
  }
  if (counters_.size() < capacity) {
    if (counters_.capacity() < capacity) counters_.reserve(capacity);  // views stay valid
    const auto i = static_cast<std::uint32_t>(counters_.size());
    counters_.push_back(counter{std::string(id), n, i});
    heap_.push_back(i);
    index_.emplace(counters_.back().id, i);
    sift_up(i);
    return;
  }
  // Full: the new id takes over the smallest counter and inherits its count.
  const std::uint32_t i = heap_.front();
  counter& smallest = counters_[i];
  index_.erase(smallest.id);
  smallest.id.assign(id);
  smallest.count += n;
  index_.emplace(smallest.id, i);
  sift_down(0);
}

void hot_keys::summary::clear() {
  index_.clear();
  heap_.clear();
  counters_.clear();
}

void hot_keys::summary::sift_down(std::uint32_t at) {
  const auto size = static_cast<std::uint32_t>(heap_.size());
  for (;;) {
    const std::uint32_t left = 2 * at + 1;
    const std::uint32_t right = left + 1;
    std::uint32_t smallest = at;
    if (left < size && count_at(left) < count_at(smallest)) smallest = left;
    if (right < size && count_at(right) < count_at(smallest)) smallest = right;
    if (smallest == at) return;
    swap_at(at, smallest);
    at = smallest;
  }
}

void hot_keys::summary::sift_up(std::uint32_t at) {
  while (at > 0) {
    const std::uint32_t parent = (at - 1) / 2;
    if (count_at(parent) <= count_at(at)) return;
    swap_at(at, parent);
    at = parent;
  }
}

void hot_keys::summary::swap_at(std::uint32_t a, std::uint32_t b) {
  std::swap(heap_[a], heap_[b]);
  counters_[heap_[a]].heap_at = a;
  counters_[heap_[b]].heap_at = b;
}

}  // namespace troupe::sharding
