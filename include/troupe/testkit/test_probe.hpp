#pragma once
/// A probe for tests: a ref that records what it receives, with expectations that wait on a
/// condition with a deadline (never a bare sleep). Deadlines scale with TROUPE_TEST_TIMEFACTOR.

#include <troupe/core/actor_system.hpp>
#include <troupe/core/detail/actor_target.hpp>
#include <troupe/core/detail/message_convert.hpp>
#include <troupe/core/detail/system_messages.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <typeinfo>

namespace troupe::testkit {

/// An expectation of a probe was not met.
class expectation_failed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// `d` scaled by TROUPE_TEST_TIMEFACTOR (default 1), for slow machines and sanitizers.
inline duration dilated(duration d) {
  const char* f = std::getenv("TROUPE_TEST_TIMEFACTOR");
  const double factor = f != nullptr ? std::atof(f) : 1.0;
  return std::chrono::duration_cast<duration>(d * (factor > 0 ? factor : 1.0));
}

/// Waits until `condition()` holds (Akka's awaitCond), polling; throws expectation_failed after
/// `timeout` (scaled by TROUPE_TEST_TIMEFACTOR). For states no message announces, e.g. "the
/// actors have armed their timers" before a test advances a manual clock.
template <class Condition>
void await_condition(Condition condition, duration timeout = std::chrono::seconds(3),
                     const std::string& what = "condition") {
  const auto deadline = std::chrono::steady_clock::now() + dilated(timeout);
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      throw expectation_failed(what + " did not hold within timeout");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

namespace detail {

class probe_target final : public troupe::detail::actor_target {
 public:
  probe_target(troupe::detail::system_impl* system, std::string name)
      : system_(system), name_(std::move(name)) {}
  ~probe_target() override {
    for (auto* e : messages_) delete e;
  }

  void enqueue(troupe::detail::envelope_base* e) noexcept override {
    {
      std::lock_guard lock(mutex_);
      messages_.push_back(e);
    }
    cv_.notify_all();
  }
  void enqueue_any(troupe::detail::envelope_base* e) noexcept override { enqueue(e); }
  void send_system(troupe::detail::system_message* m) noexcept override {
    if (auto* t = dynamic_cast<troupe::detail::terminated_message*>(m)) {
      {
        std::lock_guard lock(mutex_);
        terminated_.push_back(t->who);
      }
      cv_.notify_all();
    } else {
      m->on_undelivered(*this);
    }
    delete m;
  }
  [[nodiscard]] std::string path() const override { return "/temp/" + name_; }
  [[nodiscard]] troupe::detail::system_impl* owner() const noexcept override { return system_; }
  [[nodiscard]] bool is_terminated() const noexcept override { return false; }

  /// Waits for a message; null on timeout. `pump` runs actors when scheduling is manual.
  template <class Pump>
  std::unique_ptr<troupe::detail::envelope_base> pop(duration timeout, Pump pump) {
    return wait_for(timeout, pump, [this]() -> std::unique_ptr<troupe::detail::envelope_base> {
      if (messages_.empty()) return nullptr;
      auto* e = messages_.front();
      messages_.pop_front();
      return std::unique_ptr<troupe::detail::envelope_base>(e);
    });
  }

  template <class Pump>
  bool pop_terminated(const troupe::detail::actor_target* who, duration timeout, Pump pump) {
    return wait_for(timeout, pump, [&]() -> bool {
      for (auto it = terminated_.begin(); it != terminated_.end(); ++it) {
        if (it->get() == who) {
          terminated_.erase(it);
          return true;
        }
      }
      return false;
    });
  }

 private:
  template <class Pump, class Take>
  auto wait_for(duration timeout, Pump pump, Take take) -> decltype(take()) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::unique_lock lock(mutex_);
    for (;;) {
      if (auto got = take()) return got;
      if (std::chrono::steady_clock::now() >= deadline) return {};
      lock.unlock();
      const bool progressed = pump();
      lock.lock();
      if (!progressed) cv_.wait_for(lock, std::chrono::milliseconds(2));
    }
  }

  troupe::detail::system_impl* system_;
  std::string name_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<troupe::detail::envelope_base*> messages_;
  std::deque<troupe::detail::intrusive_ptr<troupe::detail::actor_target>> terminated_;
};

}  // namespace detail

/// Records messages of type M (and replies of any type) sent to `ref()`.
template <class M>
class test_probe {
 public:
  explicit test_probe(actor_system& system, std::string name = "probe")
      : system_(system),
        target_(new detail::probe_target(&system.impl(), std::move(name)), troupe::detail::adopt) {}

  [[nodiscard]] actor_ref<M> ref() const { return actor_ref<M>(target_); }
  [[nodiscard]] untyped_ref untyped() const { return untyped_ref(target_); }

  /// The next message, as T (M itself or one alternative of a variant M). Throws
  /// expectation_failed on timeout or when the message is of another type.
  template <class T = M>
  T expect_message(duration timeout = std::chrono::seconds(3)) {
    auto e = probe().pop(dilated(timeout), pump());
    if (!e) {
      throw expectation_failed("probe " + target_->path() + ": no message of type " +
                               troupe::detail::type_name(typeid(T)) + " within timeout");
    }
    last_sender_ = untyped_ref(e->sender);
    auto value = troupe::detail::convert_payload<T>(*e);
    if (!value) {
      throw expectation_failed("probe " + target_->path() + ": expected " +
                               troupe::detail::type_name(typeid(T)) + " but got " +
                               troupe::detail::type_name(e->type()));
    }
    return std::move(*value);
  }

  /// Fails if any message arrives within `d`.
  void expect_no_message(duration d = std::chrono::milliseconds(100)) {
    auto e = probe().pop(dilated(d), pump());
    if (e) {
      throw expectation_failed("probe " + target_->path() + ": unexpected message of type " +
                               troupe::detail::type_name(e->type()));
    }
  }

  /// Death watch from the probe.
  void watch(const untyped_ref& ref) {
    ref.target()->send_system(new troupe::detail::watch_message(target_));
  }
  /// Waits until a watched actor has stopped.
  void expect_terminated(const untyped_ref& ref, duration timeout = std::chrono::seconds(3)) {
    if (!probe().pop_terminated(ref.target(), dilated(timeout), pump())) {
      throw expectation_failed("probe " + target_->path() + ": " + ref.path() +
                               " did not terminate within timeout");
    }
  }

  /// Sender of the last message received.
  [[nodiscard]] const untyped_ref& last_sender() const noexcept { return last_sender_; }
  /// Replies to the last sender (answers an ask made to the probe).
  template <class T>
  void reply(T&& value) const {
    last_sender_.tell_any(std::forward<T>(value));
  }

 private:
  detail::probe_target& probe() { return static_cast<detail::probe_target&>(*target_); }
  auto pump() {
    return [this] {
      try {
        return system_.run_until_idle() > 0;
      } catch (const troupe::error&) {
        return false;  // threaded scheduling: the workers run the actors
      }
    };
  }

  actor_system& system_;
  troupe::detail::intrusive_ptr<troupe::detail::actor_target> target_;
  untyped_ref last_sender_;
};

}  // namespace troupe::testkit
