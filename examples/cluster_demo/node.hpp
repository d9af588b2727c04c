#pragma once
// One cluster node of the demo: its actor system, its remoting over TCP on 127.0.0.1, its
// membership in the in-process model of etcd, and the "cart" type started on it. All nodes
// share one SQLite journal; the cluster raises a shard's fence in it before the shard's carts
// recover on a new owner, so writes of an owner that lost the shard are refused.

#include <troupe/cluster/cluster_node.hpp>
#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/cluster/remote_node.hpp>
#include <troupe/core/actor_system.hpp>
#include <troupe/persistence/plugin.hpp>

#include "cart.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace cluster_demo {

/// Runs the handlers of the nodes' etcd clients, as a node's I/O thread would.
class io_thread {
 public:
  io_thread() : guard_(io_.get_executor()), thread_([this] { io_.run(); }) {}
  ~io_thread() {
    io_.stop();
    thread_.join();
  }
  io_thread(const io_thread&) = delete;
  io_thread& operator=(const io_thread&) = delete;
  boost::asio::any_io_executor executor() { return io_.get_executor(); }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::thread thread_;
};

/// What every node of the demo shares.
struct cluster_parts {
  troupe::cluster::in_process_etcd& etcd;
  io_thread& io;
  std::shared_ptr<troupe::clock> clock;
  std::shared_ptr<troupe::persistence::plugin> journal;
  activation_registry& activations;
  std::uint32_t shards = 64;
};

class demo_node {
 public:
  /// Joins the cluster and starts the cart type; returns once both are done.
  demo_node(std::string name, const cluster_parts& parts);
  /// Stops the node: membership first (a node that did not leave has its lease run out), then
  /// remoting, then the actor system.
  ~demo_node();
  demo_node(const demo_node&) = delete;
  demo_node& operator=(const demo_node&) = delete;

  /// A crash, as far as the others can tell: the node loses etcd and the network at once and
  /// never says goodbye. It fences itself before its lease can run out.
  void kill();

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] troupe::cluster::cluster_node& cluster() { return *cluster_; }
  [[nodiscard]] const troupe::actor_ref<cart_command>& carts() const { return carts_; }
  [[nodiscard]] std::string address() const;

 private:
  std::string name_;
  troupe::cluster::in_process_etcd& etcd_;
  troupe::actor_system system_;
  troupe::cluster::remote_node remote_;
  std::shared_ptr<troupe::cluster::consensus_store> store_;
  std::shared_ptr<troupe::cluster::cluster_node> cluster_;
  troupe::actor_ref<cart_command> carts_;
};

}  // namespace cluster_demo
