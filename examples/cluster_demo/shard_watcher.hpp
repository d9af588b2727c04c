#pragma once
// Watches where the cart shards live, as the consensus store says: it reads one live node's
// cluster state every 100 ms, prints each shard that changed owner since the last read, and keeps
// the latest shard map for the phase banners and the join check.
//
// A move is a hand-off when its old owner was still a member, or was leaving (a graceful leave
// revokes the lease right after its last hand-off, so the read that shows the move may no longer
// show the member, nor a read ever show it leaving), and a failover when the old owner's lease
// ran out without a leave.

#include <troupe/cluster/cluster_node.hpp>

#include "console.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace cluster_demo {

class shard_watcher {
 public:
  shard_watcher(console& out, demo_clock::time_point t0) : out_(out), t0_(t0) {}
  ~shard_watcher() { stop(); }
  shard_watcher(const shard_watcher&) = delete;
  shard_watcher& operator=(const shard_watcher&) = delete;

  /// Reads once (nothing is printed for it), then polls `reader`, which must outlive stop().
  void start(troupe::cluster::cluster_node& reader);
  void stop();
  /// Reads and prints the moves now, so that they come before what the caller prints next.
  void catch_up() { poll(); }
  /// `node` is about to leave gracefully: its shards move by hand-off.
  void leaving(const std::string& node) {
    std::lock_guard lock(mutex_);
    leaving_.insert(node);
  }

  /// The shards of each node, as of the latest read.
  [[nodiscard]] std::map<std::string, std::set<std::uint32_t>> shards() const;
  /// Reads the state now (not waiting for the next poll) and returns the shards of `node`.
  [[nodiscard]] std::set<std::uint32_t> shards_of_now(const std::string& node) const;
  [[nodiscard]] int handoffs() const { return handoffs_.load(); }
  [[nodiscard]] int failovers() const { return failovers_.load(); }
  /// When the latest move was seen (the start when none was).
  [[nodiscard]] demo_clock::time_point last_move() const;

 private:
  void poll();

  console& out_;
  demo_clock::time_point t0_;
  troupe::cluster::cluster_node* reader_ = nullptr;
  /// One poll at a time, so that each move is printed once and in order.
  std::mutex polling_;
  mutable std::mutex mutex_;
  std::map<std::uint32_t, std::string> owner_;
  std::set<std::string> leaving_;
  demo_clock::time_point last_move_{};
  std::atomic<int> handoffs_{0};
  std::atomic<int> failovers_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace cluster_demo
