#pragma once
/// Deadlines in FIFO lanes plus a min-heap, shared by the steady and the manual clock. A lane
/// takes a timer whose deadline is no earlier than the lane's last one (the common case: equal
/// delays armed one after the other, e.g. every entity's 1 ms await; a few lanes so that a
/// 5-minute passivation timer or two racing workers do not push those into the heap): insert and
/// pop are O(1). The heap (O(log n) cancel) takes the rest. Callbacks run in (deadline,
/// insertion) order across all of them.
/// Not thread-safe: its clock guards it with a mutex.

#include <troupe/core/clock.hpp>

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace troupe::detail {

class timer_queue {
 public:
  timer_id insert(time_point at, clock::callback fn);
  /// Removes a pending callback; it is moved to `out` so that it can be destroyed unlocked.
  /// `generation_bits`: how many low bits of the slot's generation the id carries.
  bool erase(timer_id id, clock::callback& out, unsigned generation_bits = 32);
  [[nodiscard]] bool empty() const noexcept { return heap_.empty() && lanes_live_ == 0; }
  [[nodiscard]] std::size_t size() const noexcept { return heap_.size() + lanes_live_; }
  [[nodiscard]] time_point next_deadline() const { return slots_[earliest()].at; }
  /// Removes and returns the earliest callback if it is due at `now`.
  std::optional<clock::callback> pop_due(time_point now);

 private:
  struct slot {
    time_point at{};
    std::uint64_t seq = 0;  // insertion order breaks deadline ties
    std::uint32_t generation = 0;
    std::uint32_t heap_pos = 0;
    bool used = false;
    std::int8_t lane = -1;  // its lane (until it leaves the lane's front), or -1: the heap
    clock::callback fn;
  };

  [[nodiscard]] bool less(std::uint32_t a, std::uint32_t b) const noexcept;
  // The slot of the earliest pending callback (not empty()).
  [[nodiscard]] std::uint32_t earliest() const noexcept;
  // Drops cancelled entries from a lane's front, so that a front is always pending.
  void trim_lane(std::size_t lane) noexcept;
  void sift_up(std::size_t pos) noexcept;
  void sift_down(std::size_t pos) noexcept;
  clock::callback remove_at(std::size_t pos) noexcept;
  void place(std::size_t pos, std::uint32_t slot_index) noexcept;

  std::vector<slot> slots_;
  std::vector<std::uint32_t> free_;
  std::vector<std::uint32_t> heap_;
  struct lane {
    // Slots in insertion order with non-decreasing deadlines; a cancelled one stays (unused,
    // its slot not yet free) until it reaches the front.
    std::deque<std::uint32_t> slots;
    time_point last_at{};
  };
  static constexpr std::size_t lane_count = 4;
  std::array<lane, lane_count> lanes_;
  std::size_t lanes_live_ = 0;
  std::uint64_t next_seq_ = 0;
};

}  // namespace troupe::detail
