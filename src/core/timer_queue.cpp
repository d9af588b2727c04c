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
  // The lane whose last deadline is the latest one not after `at` (lanes stay tight), else an
  // empty lane, else the heap.
  int best = -1;
  int vacant = -1;
  for (std::size_t i = 0; i < lane_count; ++i) {
    const lane& l = lanes_[i];
    if (l.slots.empty()) {
      if (vacant < 0) vacant = static_cast<int>(i);
    } else if (l.last_at <= at &&
               (best < 0 || l.last_at > lanes_[static_cast<std::size_t>(best)].last_at)) {
      best = static_cast<int>(i);
    }
  }
  if (best < 0) best = vacant;
  if (best >= 0) {
    lane& l = lanes_[static_cast<std::size_t>(best)];
    s.lane = static_cast<std::int8_t>(best);
    l.slots.push_back(index);
    l.last_at = at;
    ++lanes_live_;
    return make_id(index, s.generation);
  }
  s.lane = -1;
  heap_.push_back(index);
  s.heap_pos = static_cast<std::uint32_t>(heap_.size() - 1);
  sift_up(heap_.size() - 1);
  return make_id(index, s.generation);
}

bool timer_queue::erase(timer_id id, clock::callback& out, unsigned generation_bits) {
  const auto low = static_cast<std::uint32_t>(id & 0xffffffffu);
  if (low == 0 || low > slots_.size()) return false;
  const std::uint32_t index = low - 1;
  slot& s = slots_[index];
  const std::uint32_t mask =
      generation_bits >= 32 ? 0xffffffffu : ((std::uint32_t{1} << generation_bits) - 1);
  if (!s.used || (s.generation & mask) != (static_cast<std::uint32_t>(id >> 32) & mask)) {
    return false;
  }
  if (s.lane >= 0) {
    // Left in place: its slot is freed when it reaches the front.
    s.used = false;
    out = std::move(s.fn);
    s.fn = nullptr;
    --lanes_live_;
    trim_lane(static_cast<std::size_t>(s.lane));
    return true;
  }
  out = remove_at(s.heap_pos);
  return true;
}

std::optional<clock::callback> timer_queue::pop_due(time_point now) {
  if (empty()) return std::nullopt;
  const std::uint32_t index = earliest();
  slot& s = slots_[index];
  if (s.at > now) return std::nullopt;
  if (s.lane < 0) return remove_at(0);
  const auto l = static_cast<std::size_t>(s.lane);
  lanes_[l].slots.pop_front();
  --lanes_live_;
  s.used = false;
  s.lane = -1;
  clock::callback fn = std::move(s.fn);
  s.fn = nullptr;
  free_.push_back(index);
  trim_lane(l);
  return fn;
}

std::uint32_t timer_queue::earliest() const noexcept {
  bool found = !heap_.empty();
  std::uint32_t best = found ? heap_.front() : 0;
  for (const lane& l : lanes_) {
    if (l.slots.empty()) continue;
    if (!found || less(l.slots.front(), best)) best = l.slots.front();
    found = true;
  }
  return best;
}

void timer_queue::trim_lane(std::size_t index) noexcept {
  auto& q = lanes_[index].slots;
  while (!q.empty() && !slots_[q.front()].used) {
    slots_[q.front()].lane = -1;
    free_.push_back(q.front());
    q.pop_front();
  }
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
