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
  if (const auto it = position_.find(id); it != position_.end()) {
    heap_[it->second].count += n;
    sift_down(it->second);
    return;
  }
  if (heap_.size() < capacity) {
    position_.emplace(std::string(id), heap_.size());
    heap_.push_back(counter{std::string(id), n});
    sift_up(heap_.size() - 1);
    return;
  }
  // Full: the new id takes over the smallest counter and inherits its count.
  counter& smallest = heap_.front();
  position_.erase(smallest.id);
  position_.emplace(std::string(id), 0);
  smallest.id = id;
  smallest.count += n;
  sift_down(0);
}

void hot_keys::summary::clear() {
  heap_.clear();
  position_.clear();
}

void hot_keys::summary::sift_down(std::size_t i) {
  for (;;) {
    const std::size_t left = 2 * i + 1;
    const std::size_t right = left + 1;
    std::size_t smallest = i;
    if (left < heap_.size() && heap_[left].count < heap_[smallest].count) smallest = left;
    if (right < heap_.size() && heap_[right].count < heap_[smallest].count) smallest = right;
    if (smallest == i) return;
    swap_at(i, smallest);
    i = smallest;
  }
}

void hot_keys::summary::sift_up(std::size_t i) {
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (heap_[parent].count <= heap_[i].count) return;
    swap_at(i, parent);
    i = parent;
  }
}

void hot_keys::summary::swap_at(std::size_t a, std::size_t b) {
  std::swap(heap_[a], heap_[b]);
  position_.find(heap_[a].id)->second = a;
  position_.find(heap_[b].id)->second = b;
}

}  // namespace troupe::sharding
