#pragma once
/// Intrusive multi-producer single-consumer queue (Vyukov's design): one exchange per push,
/// no allocation, wait-free for producers.

#include <atomic>
#include <cstddef>

namespace troupe::detail {

/// A node a queue can link; embed it as the first base of the queued type.
struct mpsc_node {
  std::atomic<mpsc_node*> next{nullptr};
};

/// Any thread may push; only the owner (the thread running the actor's turn) pops.
class mpsc_queue {
 public:
  mpsc_queue() noexcept : tail_(&stub_), head_(&stub_) {}
  mpsc_queue(const mpsc_queue&) = delete;
  mpsc_queue& operator=(const mpsc_queue&) = delete;

  void push(mpsc_node* n) noexcept {
    n->next.store(nullptr, std::memory_order_relaxed);
    mpsc_node* prev = tail_.exchange(n, std::memory_order_seq_cst);
    prev->next.store(n, std::memory_order_release);
  }

  /// Returns the oldest node, or nullptr when empty or when a producer is between its two steps
  /// (the producer then re-schedules the consumer, so nothing is lost).
  mpsc_node* pop() noexcept {
    mpsc_node* head = head_;
    mpsc_node* next = head->next.load(std::memory_order_acquire);
    if (head == &stub_) {
      if (next == nullptr) return nullptr;
      head_ = next;
      head = next;
      next = next->next.load(std::memory_order_acquire);
    }
    if (next != nullptr) {
      head_ = next;
      // The next pop reads `next`, a node another thread wrote: start fetching it now, so the
      // cache miss overlaps handling `head` instead of stalling the consumer then.
      __builtin_prefetch(next);
      return head;
    }
    if (head != tail_.load(std::memory_order_acquire)) return nullptr;
    push(&stub_);
    next = head->next.load(std::memory_order_acquire);
    if (next != nullptr) {
      head_ = next;
      return head;
    }
    return nullptr;
  }

  /// Consumer-side: reads ahead through the next `n` queued nodes (no pop) so that they are
  /// in cache when popped. A batch handler that awaits I/O calls this after it suspends: the
  /// next batch's cache misses then overlap the wait instead of delaying the batch.
  void warm(std::size_t n) const noexcept {
    const mpsc_node* node = head_;
    for (std::size_t i = 0; i < n && node != nullptr; ++i) {
      __builtin_prefetch(reinterpret_cast<const char*>(node) + 64);
      node = node->next.load(std::memory_order_acquire);
    }
  }

  /// Consumer-side: true when nothing is queued and no push is in progress.
  [[nodiscard]] bool empty() const noexcept {
    return head_ == &stub_ && tail_.load(std::memory_order_seq_cst) == &stub_;
  }

  /// Producer-side, safe from any thread: true when a push happened since the consumer last
  /// drained the queue. With !empty() read by the consumer beforehand, tells whether anything
  /// may be queued after the consumer gave up its turn.
  [[nodiscard]] bool pushed_since_drained() const noexcept {
    return tail_.load(std::memory_order_seq_cst) != &stub_;
  }

 private:
  std::atomic<mpsc_node*> tail_;
  mpsc_node* head_;
  mpsc_node stub_;
};

}  // namespace troupe::detail
