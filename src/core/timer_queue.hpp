#pragma once
/// A min-heap of deadlines with O(log n) cancel, shared by the steady and the manual clock.
/// Not thread-safe: its clock guards it with a mutex.

#include <troupe/core/clock.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace troupe::detail {

class timer_queue {
 public:
  timer_id insert(time_point at, clock::callback fn);
  /// Removes a pending callback; it is moved to `out` so that it can be destroyed unlocked.
  bool erase(timer_id id, clock::callback& out);
  [[nodiscard]] bool empty() const noexcept { return heap_.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return heap_.size(); }
  [[nodiscard]] time_point next_deadline() const { return slots_[heap_.front()].at; }
  /// Removes and returns the earliest callback if it is due at `now`.
  std::optional<clock::callback> pop_due(time_point now);

 private:
  struct slot {
    time_point at{};
    std::uint64_t seq = 0;  // insertion order breaks deadline ties
    std::uint32_t generation = 0;
    std::uint32_t heap_pos = 0;
    bool used = false;
    clock::callback fn;
  };

  [[nodiscard]] bool less(std::uint32_t a, std::uint32_t b) const noexcept;
  void sift_up(std::size_t pos) noexcept;
  void sift_down(std::size_t pos) noexcept;
  clock::callback remove_at(std::size_t pos) noexcept;
  void place(std::size_t pos, std::uint32_t slot_index) noexcept;

  std::vector<slot> slots_;
  std::vector<std::uint32_t> free_;
  std::vector<std::uint32_t> heap_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace troupe::detail
