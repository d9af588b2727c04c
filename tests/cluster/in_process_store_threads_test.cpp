// ctest-labels: concurrency
// The in-process etcd model under threads: clients called from several threads at once, handlers
// on an io_context run by two threads, the real clock. Compare-and-set increments must all land,
// and a watch must see every one of them in order, one handler call at a time.
#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/core/clock.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace troupe::cluster {
namespace {

using namespace std::chrono_literals;

template <class T, class Start>
std::pair<std::error_code, T> call(Start start) {
  auto done = std::make_shared<std::promise<std::pair<std::error_code, T>>>();
  auto answer = done->get_future();
  start([done](std::error_code ec, T v) { done->set_value({ec, std::move(v)}); });
  if (answer.wait_for(30s) != std::future_status::ready) {
    ADD_FAILURE() << "no answer";
    return {make_error_code(errc::store_unavailable), T{}};
  }
  return answer.get();
}

TEST(in_process_store_threads, concurrent_compare_and_set_increments_all_land_in_watch_order) {
  constexpr int writers = 4;
  constexpr int increments = 50;
  boost::asio::io_context io;
  auto guard = boost::asio::make_work_guard(io);
  std::vector<std::thread> io_threads;
  for (int i = 0; i < 2; ++i) io_threads.emplace_back([&] { io.run(); });
  in_process_etcd etcd(make_steady_clock());

  auto watcher = etcd.client(io.get_executor());
  std::mutex mutex;
  std::vector<std::pair<revision, std::string>> seen;
  std::atomic<int> inside{0};
  std::atomic<bool> overlapped{false};
  auto handle =
      watcher->watch(key_range::single("counter"), 1, [&](std::error_code ec, watch_batch b) {
        if (inside.fetch_add(1) != 0) overlapped = true;
        ASSERT_FALSE(ec);
        {
          std::lock_guard lock(mutex);
          for (const auto& e : b.events) seen.emplace_back(e.kv.mod_revision, e.kv.value);
        }
        inside.fetch_sub(1);
      });

  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&] {
      auto store = etcd.client(io.get_executor());
      for (int i = 0; i < increments; ++i) {
        for (;;) {
          auto [rec, read] = call<range_result>(
              [&](auto h) { store->range(key_range::single("counter"), std::move(h)); });
          ASSERT_FALSE(rec);
          const int value = read.kvs.empty() ? 0 : std::stoi(read.kvs[0].value);
          const revision mod = read.kvs.empty() ? 0 : read.kvs[0].mod_revision;
          auto [tec, result] = call<txn_result>([&](auto h) {
            store->txn({{compare::mod_revision_is("counter", mod)},
                        {put_op{"counter", std::to_string(value + 1), 0}},
                        {}},
                       std::move(h));
          });
          ASSERT_FALSE(tec);
          if (result.succeeded) break;
        }
      }
    });
  }
  for (auto& t : threads) t.join();

  const auto deadline = std::chrono::steady_clock::now() + 30s;
  for (;;) {
    {
      std::lock_guard lock(mutex);
      if (seen.size() >= static_cast<std::size_t>(writers * increments)) break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the watch fell behind";
    std::this_thread::sleep_for(200us);
  }
  handle->cancel();
  guard.reset();
  io.stop();
  for (auto& t : io_threads) t.join();

  EXPECT_FALSE(overlapped) << "a watch's handler ran twice at once";
  std::lock_guard lock(mutex);
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(writers * increments));
  for (std::size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].second, std::to_string(i + 1)) << i;
    if (i > 0) {
      EXPECT_GT(seen[i].first, seen[i - 1].first) << i;
    }
  }
}

}  // namespace
}  // namespace troupe::cluster
