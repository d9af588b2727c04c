#include "core/timer_queue.hpp"

#include <utility>

namespace troupe::detail {

namespace {
timer_id make_id(std::uint32_t index, std::uint32_t generation) {
  return (static_cast<timer_id>(generation) << 32) | (static_cast<timer_id>(index) + 1);
}
}  // namespace

timer_id timer_queue::insert(time_point at, clock::callback fn) {
  std::uint32_t index;
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else {
    index = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  slot& s = slots_[index];
  s.at = at;
  s.seq = next_seq_++;
  s.generation++;
  s.used = true;
  s.fn = std::move(fn);
  heap_.push_back(index);
  s.heap_pos = static_cast<std::uint32_t>(heap_.size() - 1);
  sift_up(heap_.size() - 1);
  return make_id(index, s.generation);
}

bool timer_queue::erase(timer_id id, clock::callback& out) {
  const auto low = static_cast<std::uint32_t>(id & 0xffffffffu);
  if (low == 0 || low > slots_.size()) return false;
  const std::uint32_t index = low - 1;
  slot& s = slots_[index];
  if (!s.used || s.generation != static_cast<std::uint32_t>(id >> 32)) return false;
  out = remove_at(s.heap_pos);
  return true;
}

std::optional<clock::callback> timer_queue::pop_due(time_point now) {
  if (heap_.empty() || slots_[heap_.front()].at > now) return std::nullopt;
  return remove_at(0);
}

bool timer_queue::less(std::uint32_t a, std::uint32_t b) const noexcept {
  const slot& x = slots_[a];
  const slot& y = slots_[b];
  return x.at != y.at ? x.at < y.at : x.seq < y.seq;
}

void timer_queue::place(std::size_t pos, std::uint32_t slot_index) noexcept {
  heap_[pos] = slot_index;
  slots_[slot_index].heap_pos = static_cast<std::uint32_t>(pos);
}

void timer_queue::sift_up(std::size_t pos) noexcept {
  const std::uint32_t moving = heap_[pos];
  while (pos > 0) {
    const std::size_t parent = (pos - 1) / 2;
    if (!less(moving, heap_[parent])) break;
    place(pos, heap_[parent]);
    pos = parent;
  }
  place(pos, moving);
}

void timer_queue::sift_down(std::size_t pos) noexcept {
  const std::uint32_t moving = heap_[pos];
  const std::size_t n = heap_.size();
  for (;;) {
    std::size_t child = 2 * pos + 1;
    if (child >= n) break;
    if (child + 1 < n && less(heap_[child + 1], heap_[child])) ++child;
    if (!less(heap_[child], moving)) break;
    place(pos, heap_[child]);
    pos = child;
  }
  place(pos, moving);
}

clock::callback timer_queue::remove_at(std::size_t pos) noexcept {
  const std::uint32_t index = heap_[pos];
  slot& s = slots_[index];
  s.used = false;
  clock::callback fn = std::move(s.fn);
  s.fn = nullptr;
  free_.push_back(index);
  const std::uint32_t last = heap_.back();
  heap_.pop_back();
  if (pos < heap_.size()) {
    place(pos, last);
    sift_down(pos);
    sift_up(slots_[last].heap_pos);
  }
  return fn;
}

}  // namespace troupe::detail
