#pragma once
// One cluster node of the demo: its actor system, its remoting over TCP on 127.0.0.1, its
// membership in the consensus store it is given (the in-process model of etcd, or a real etcd),
// and the "cart" type started on it (or a proxy of it, which routes carts and hosts none). All
// nodes share one SQLite journal; the cluster raises a shard's fence in it before the shard's
// carts recover on a new owner, so writes of an owner that lost the shard are refused.

#include <troupe/cluster/cluster_node.hpp>
#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/cluster/remote_node.hpp>
#include <troupe/core/actor_system.hpp>
#include <troupe/persistence/plugin.hpp>

#include "cart.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <cstdint>
#include <functional>
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

/// What a node is made of.
struct node_parts {
  /// The cluster's name (etcd keys, remoting handshake).
  std::string cluster_name = "shop";
  std::shared_ptr<troupe::cluster::consensus_store> store;
  /// The membership's clock; nullptr: the cluster's default (boot time).
  std::shared_ptr<troupe::clock> clock;
  /// The carts' journal; nullptr: the node is a proxy of the cart type (it hosts no cart).
  std::shared_ptr<troupe::persistence::plugin> journal;
  /// Told of every cart's start and stop (hosting nodes only).
  activation_observer* activations = nullptr;
  std::uint32_t shards = 64;
  /// cluster_node_options::on_fenced.
  std::function<void(const std::string& reason)> on_fenced;
};

class demo_node {
 public:
  /// Joins the cluster and starts the cart type; returns once both are done. Throws when the
  /// join fails or takes longer than 30 s.
  demo_node(std::string name, node_parts parts);
  /// Stops the node: membership first (a node that did not leave has its lease run out), then
  /// remoting, then the actor system.
  ~demo_node();
  demo_node(const demo_node&) = delete;
  demo_node& operator=(const demo_node&) = delete;

  /// A crash, as far as the others can tell: the node loses `etcd` (the model its store is a
  /// client of) and the network at once and never says goodbye. It fences itself before its
  /// lease can run out.
  void kill(troupe::cluster::in_process_etcd& etcd);

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] troupe::actor_system& system() { return system_; }
  [[nodiscard]] troupe::cluster::cluster_node& cluster() { return *cluster_; }
  [[nodiscard]] const troupe::actor_ref<cart_command>& carts() const { return carts_; }
  [[nodiscard]] std::string address() const;

 private:
  std::string name_;
  troupe::actor_system system_;
  troupe::cluster::remote_node remote_;
  std::shared_ptr<troupe::cluster::consensus_store> store_;
  std::shared_ptr<troupe::cluster::cluster_node> cluster_;
  troupe::actor_ref<cart_command> carts_;
};

}  // namespace cluster_demo
