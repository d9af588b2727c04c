#pragma once
// One watch of the etcd model: its range, the revision it has reached, and the queue that hands
// its batches to the handler one at a time on the watcher's executor, in order, even when the
// executor runs on several threads.

#include <troupe/cluster/membership/consensus_store.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <system_error>
#include <utility>

namespace troupe::cluster::in_process {

class watch_feed : public std::enable_shared_from_this<watch_feed> {
 public:
  watch_feed(boost::asio::any_io_executor executor, key_range range, std::uint64_t client,
             consensus_store::watch_handler handler)
      : executor_(std::move(executor)),
        range_(std::move(range)),
        client_(client),
        handler_(std::move(handler)) {}

  [[nodiscard]] const key_range& range() const noexcept { return range_; }
  /// The client (connection) the watch belongs to.
  [[nodiscard]] std::uint64_t client() const noexcept { return client_; }

  /// Queues a batch; nothing after end() or cancel().
  void deliver(watch_batch batch);
  /// Queues the error that ends the watch; later batches are dropped.
  void end(std::error_code ec, revision header);
  /// Stops delivery: no handler call starts after this returns (one running on another thread
  /// may finish).
  void cancel() noexcept;

 private:
  void push(std::error_code ec, watch_batch batch);
  void run_one();

  boost::asio::any_io_executor executor_;
  key_range range_;
  std::uint64_t client_;
  consensus_store::watch_handler handler_;
  std::mutex mutex_;
  std::deque<std::pair<std::error_code, watch_batch>> queue_;
  bool posted_ = false;
  bool ended_ = false;
  bool cancelled_ = false;
};

}  // namespace troupe::cluster::in_process
