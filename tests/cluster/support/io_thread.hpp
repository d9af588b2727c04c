#pragma once
// An io_context run by one thread of its own, as the node layer runs a transport's executor,
// with the waits a test needs: each has a deadline (scaled by TROUPE_TEST_TIMEFACTOR).

#include <troupe/testkit/test_probe.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

namespace troupe::cluster::test {

class io_thread {
 public:
  io_thread() : guard_(boost::asio::make_work_guard(io_)), thread_([this] { run(); }) {}
  ~io_thread() {
    if (thread_.joinable()) {
      io_.stop();
      thread_.join();
    }
  }
  io_thread(const io_thread&) = delete;
  io_thread& operator=(const io_thread&) = delete;

  [[nodiscard]] boost::asio::any_io_executor executor() { return io_.get_executor(); }

  /// Runs `f` on the thread and returns its result; throws when it did not run within `timeout`.
  template <class F>
  auto call(F f, troupe::duration timeout = std::chrono::seconds(5)) -> decltype(f()) {
    // Shared: after a timeout the task may still run once this call has returned.
    auto task = std::make_shared<std::packaged_task<decltype(f())()>>(std::move(f));
    auto result = task->get_future();
    boost::asio::post(io_, [task] { (*task)(); });
    if (result.wait_for(troupe::testkit::dilated(timeout)) != std::future_status::ready) {
      throw std::runtime_error("io_thread: the executor did not run a call within the timeout");
    }
    return result.get();
  }

  /// Waits until everything posted before this call has run.
  void barrier() {
    call([] {});
  }

  /// Lets the thread finish once no work is left (no socket, timer or handler pending); true
  /// when it did within `timeout`. Otherwise stops it and returns false: something leaked.
  bool drain(troupe::duration timeout = std::chrono::seconds(5)) {
    guard_.reset();
    const bool drained = finished_.get_future().wait_for(troupe::testkit::dilated(timeout)) ==
                         std::future_status::ready;
    if (!drained) io_.stop();
    thread_.join();
    return drained;
  }

 private:
  void run() {
    io_.run();
    finished_.set_value();
  }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::promise<void> finished_;
  std::thread thread_;
};

}  // namespace troupe::cluster::test
