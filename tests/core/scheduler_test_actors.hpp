#pragma once
// Test actors for the scheduler's fairness tests: one keeps a worker in turns until stopped,
// one stops them and says whether it got its turn before the deadline.

#include <troupe/core/actor.hpp>
#include <troupe/core/actor_ref.hpp>

#include <atomic>
#include <chrono>
#include <utility>

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

/// Sets `stop` and reports whether it ran before the deadline.
class stop_reporter final : public troupe::actor<int> {
 public:
  stop_reporter(std::atomic<bool>* stop, std::chrono::steady_clock::time_point deadline,
                troupe::actor_ref<bool> out)
      : stop_(stop), deadline_(deadline), out_(std::move(out)) {}

 private:
  void receive(int& /*unused*/) override {
    out_.tell(std::chrono::steady_clock::now() < deadline_);
    stop_->store(true);
  }
  std::atomic<bool>* stop_;
  std::chrono::steady_clock::time_point deadline_;
  troupe::actor_ref<bool> out_;
};

}  // namespace troupe::test
