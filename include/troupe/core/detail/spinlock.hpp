#pragma once
/// INTERNAL. A tiny test-and-test-and-set lock for critical sections of a few instructions
/// (a waiter spins briefly, then yields its core).

#include <atomic>
#include <thread>

namespace troupe::detail {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

class spinlock {
 public:
  void lock() noexcept {
    for (int spins = 0;; ++spins) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      while (locked_.load(std::memory_order_relaxed)) {
        if (spins++ < 64) {
          cpu_relax();
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }
  bool try_lock() noexcept { return !locked_.exchange(true, std::memory_order_acquire); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace troupe::detail
