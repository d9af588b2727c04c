#pragma once
// A test actor that keeps a worker in turns: shared by the scheduler's fairness tests.

#include <troupe/core/actor.hpp>

#include <atomic>
#include <chrono>

namespace troupe::test {

/// Re-sends itself a message until `stop` is set or the deadline passes, so that the worker
/// running it never idles: its turns follow one another.
class busy_loop final : public troupe::actor<int> {
 public:
  busy_loop(const std::atomic<bool>* stop, std::chrono::steady_clock::time_point deadline)
      : stop_(stop), deadline_(deadline) {}

 private:
  void receive(int& n) override {
    if (!stop_->load() && std::chrono::steady_clock::now() < deadline_) self().tell(n + 1);
  }
  const std::atomic<bool>* stop_;
  std::chrono::steady_clock::time_point deadline_;
};

}  // namespace troupe::test
