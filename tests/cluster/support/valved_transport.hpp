#pragma once
// A transport around another one whose outbound streams' writes can be held: a valve closed by
// the test keeps the next write (bytes and completion) until it is opened, as a peer that stops
// reading leaves a sender's write pending. The node layer writes one buffer at a time, so a
// closed valve stalls its stream after one write, deterministically.

#include <troupe/cluster/transport.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace troupe::cluster::test {

/// Holds the writes of the streams it is given while closed.
class write_valve {
 public:
  /// Later writes wait.
  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  /// Sends the held writes, in order, and lets later ones pass.
  void open() {
    std::vector<std::function<void()>> held;
    {
      std::lock_guard lock(mutex_);
      closed_ = false;
      held.swap(held_);
    }
    for (auto& write : held) write();
  }
  /// Writes waiting for open().
  [[nodiscard]] std::size_t held() const {
    std::lock_guard lock(mutex_);
    return held_.size();
  }
  /// Runs `write` now, or keeps it until open().
  void pass(std::function<void()> write) {
    {
      std::lock_guard lock(mutex_);
      if (closed_) {
        held_.push_back(std::move(write));
        return;
      }
    }
    write();
  }

 private:
  mutable std::mutex mutex_;
  bool closed_ = false;
  std::vector<std::function<void()>> held_;
};

/// A stream whose writes go through a valve.
class valved_stream final : public stream {
 public:
  valved_stream(std::shared_ptr<stream> inner, std::shared_ptr<write_valve> valve)
      : inner_(std::move(inner)), valve_(std::move(valve)) {}
  void start(read_handler on_data, done_handler on_closed) override {
    inner_->start(std::move(on_data), std::move(on_closed));
  }
  void async_write(byte_buffer bytes, done_handler done) override {
    valve_->pass([inner = inner_, bytes = std::move(bytes), done = std::move(done)]() mutable {
      inner->async_write(std::move(bytes), std::move(done));
    });
  }
  void close() override { inner_->close(); }
  [[nodiscard]] std::string describe() const override { return inner_->describe(); }

 private:
  std::shared_ptr<stream> inner_;
  std::shared_ptr<write_valve> valve_;
};

/// A transport whose outbound streams (the ones it connects) write through a valve.
class valved_transport final : public transport {
 public:
  valved_transport(std::shared_ptr<transport> inner, std::shared_ptr<write_valve> valve)
      : inner_(std::move(inner)), valve_(std::move(valve)) {}
  node_address listen(const node_address& at, accept_handler on_accept) override {
    return inner_->listen(at, std::move(on_accept));
  }
  void connect(const node_address& peer, connect_handler done) override {
    inner_->connect(peer, [valve = valve_, done = std::move(done)](std::error_code ec,
                                                                   std::shared_ptr<stream> s) {
      if (s) s = std::make_shared<valved_stream>(std::move(s), valve);
      done(ec, std::move(s));
    });
  }
  void shutdown() override { inner_->shutdown(); }
  [[nodiscard]] boost::asio::any_io_executor executor() const override {
    return inner_->executor();
  }

 private:
  std::shared_ptr<transport> inner_;
  std::shared_ptr<write_valve> valve_;
};

}  // namespace troupe::cluster::test
