#pragma once
// Counters the entities of a cluster benchmark add to: how many messages each entity handled, and
// how many in all. They live in a mapping a child process can share (a file under /dev/shm), so
// that entities on a node in another process count exactly as those in this one do, and the
// process that sends can bound what is still in flight without a message back.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace troupe::bench {

class shared_tallies {
 public:
  /// Counters for `entities` entities, in this process's memory only.
  explicit shared_tallies(std::size_t entities);
  /// Counters for `entities` entities in the file `path`, mapped shared: created (zeroed) when
  /// `create`, else opened as another process created it. Throws bench_failure when it cannot.
  shared_tallies(std::size_t entities, const std::string& path, bool create);
  ~shared_tallies();
  shared_tallies(const shared_tallies&) = delete;
  shared_tallies& operator=(const shared_tallies&) = delete;

  [[nodiscard]] std::atomic<std::int64_t>& handled() const noexcept { return slots_[0]; }
  [[nodiscard]] std::atomic<std::int64_t>& per_id(std::size_t entity) const noexcept {
    return slots_[first_entity + entity];
  }
  [[nodiscard]] std::size_t size() const noexcept { return entities_; }

 private:
  // The total gets a cache line of its own: every entity writes it, and the sender reads it.
  static constexpr std::size_t first_entity = 8;
  static_assert(std::atomic<std::int64_t>::is_always_lock_free,
                "counters shared between processes must be lock-free");

  std::size_t entities_;
  std::size_t bytes_;
  std::atomic<std::int64_t>* slots_ = nullptr;
};

}  // namespace troupe::bench
