#pragma once
// Records what a transport stream delivers (bytes, the end), and what a listener accepts, for a
// test thread to wait on with deadlines.

#include <troupe/cluster/transport.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace troupe::cluster::test {

inline byte_buffer bytes_of(std::string_view text) {
  byte_buffer b(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) b[i] = static_cast<std::byte>(text[i]);
  return b;
}

inline std::string text_of(const byte_buffer& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

/// Starts a stream and keeps what it delivers.
class stream_probe : public std::enable_shared_from_this<stream_probe> {
 public:
  /// Starts `s` with handlers that feed this probe.
  static std::shared_ptr<stream_probe> attach(const std::shared_ptr<stream>& s) {
    auto probe = std::make_shared<stream_probe>();
    s->start(
        [probe](std::span<const std::byte> data) {
          std::lock_guard lock(probe->mutex_);
          probe->received_.insert(probe->received_.end(), data.begin(), data.end());
          probe->changed_.notify_all();
        },
        [probe](std::error_code ec) {
          std::lock_guard lock(probe->mutex_);
          ++probe->closed_count_;
          probe->closed_ = ec;
          probe->changed_.notify_all();
        });
    return probe;
  }

  /// Waits until at least `n` bytes arrived; returns everything received so far.
  byte_buffer wait_for_bytes(std::size_t n, troupe::duration timeout = std::chrono::seconds(5)) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, troupe::testkit::dilated(timeout),
                      [&] { return received_.size() >= n; });
    return received_;
  }

  /// Waits for on_closed; its error code, or nullopt after `timeout`.
  std::optional<std::error_code> wait_closed(troupe::duration timeout = std::chrono::seconds(5)) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, troupe::testkit::dilated(timeout), [&] { return closed_count_ > 0; });
    return closed_;
  }

  [[nodiscard]] int closed_count() {
    std::lock_guard lock(mutex_);
    return closed_count_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  byte_buffer received_;
  std::optional<std::error_code> closed_;
  int closed_count_ = 0;
};

/// What a listener accepted, in order.
class accept_queue {
 public:
  /// The handler to give transport::listen.
  transport::accept_handler handler() {
    return [this](std::shared_ptr<stream> s) {
      std::lock_guard lock(mutex_);
      accepted_.push_back(std::move(s));
      ++count_;
      changed_.notify_all();
    };
  }

  /// The next accepted stream, or null after `timeout`.
  std::shared_ptr<stream> pop(troupe::duration timeout = std::chrono::seconds(5)) {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, troupe::testkit::dilated(timeout),
                           [&] { return !accepted_.empty(); })) {
      return nullptr;
    }
    auto s = std::move(accepted_.front());
    accepted_.pop_front();
    return s;
  }

  /// How many streams were accepted in all.
  [[nodiscard]] int count() {
    std::lock_guard lock(mutex_);
    return count_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<stream>> accepted_;
  int count_ = 0;
};

/// The outcome of transport::connect.
struct connect_result {
  std::error_code error;
  std::shared_ptr<cluster::stream> stream;
};

/// Connects and waits for the outcome; `error` is timed_out when `done` did not run in time.
inline connect_result connect_and_wait(transport& t, const node_address& peer,
                                       troupe::duration timeout = std::chrono::seconds(10)) {
  auto promise = std::make_shared<std::promise<connect_result>>();
  auto future = promise->get_future();
  t.connect(peer, [promise](std::error_code ec, std::shared_ptr<stream> s) {
    promise->set_value(connect_result{ec, std::move(s)});
  });
  if (future.wait_for(troupe::testkit::dilated(timeout)) != std::future_status::ready) {
    return {std::make_error_code(std::errc::timed_out), nullptr};
  }
  return future.get();
}

/// Writes `bytes` and waits for the write's outcome (timed_out when `done` did not run in time).
inline std::error_code write_and_wait(stream& s, byte_buffer bytes,
                                      troupe::duration timeout = std::chrono::seconds(10)) {
  auto promise = std::make_shared<std::promise<std::error_code>>();
  auto future = promise->get_future();
  s.async_write(std::move(bytes), [promise](std::error_code ec) { promise->set_value(ec); });
  if (future.wait_for(troupe::testkit::dilated(timeout)) != std::future_status::ready) {
    return std::make_error_code(std::errc::timed_out);
  }
  return future.get();
}

}  // namespace troupe::cluster::test
