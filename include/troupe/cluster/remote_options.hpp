#pragma once
/// Settings of a node's remoting; chain the with_* setters.

#include <troupe/cluster/message_registry.hpp>
#include <troupe/cluster/node_address.hpp>
#include <troupe/cluster/transport.hpp>
#include <troupe/cluster/wire/frame.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace troupe::cluster {

/// Makes the node's transport, given the executor it must run its callbacks on.
using transport_factory = std::function<std::shared_ptr<transport>(boost::asio::any_io_executor)>;

struct remote_options {
  /// Nodes talk only to nodes of the same cluster name (checked in the handshake).
  std::string cluster_name = "troupe";
  /// Where this node listens; port 0 picks a free port (see remote_node::self()).
  node_address bind{"127.0.0.1", 0};
  /// The message types that may cross nodes. Required.
  std::shared_ptr<const message_registry> registry;
  /// The transport (TCP, TLS, or the in-memory test network). Required.
  transport_factory transport;
  /// Frames larger than this are refused, and the connection that sent one is closed.
  std::size_t max_frame_size = wire::default_max_frame_size;
  /// Messages queued for a peer that is not connected (yet); more go to dead letters.
  std::size_t max_queued_unconnected = 10'000;
  /// Messages queued for a connected peer that cannot keep up; more go to dead letters.
  std::size_t max_queued_connected = 1'000'000;
  /// Bytes queued for a peer, connected or not, counted as the encoded messages; a message
  /// beyond it goes to dead letters. At least max_frame_size.
  std::size_t max_queued_bytes = 64U << 20U;
  /// How often a node tells a peer it is alive.
  std::chrono::milliseconds heartbeat_interval{500};
  /// A peer silent for this long is unreachable: its connection is closed, watchers of its
  /// actors get `terminated`, asks waiting on it fail.
  std::chrono::milliseconds unreachable_after{3'000};
  /// How long a connection may take to complete its handshake.
  std::chrono::milliseconds handshake_timeout{3'000};
  /// Reconnect backoff: doubles from the first to the second value.
  std::chrono::milliseconds reconnect_backoff_min{100};
  std::chrono::milliseconds reconnect_backoff_max{5'000};
  /// No I/O thread of its own: the remoting's handlers run on the actor system's io_context,
  /// which a system with manual scheduling runs inside run_until_idle(). For simulations, where
  /// one thread drives every node (docs/simulation.md); a threaded system keeps the default.
  bool on_system_io = false;
  /// This run's incarnation, told to peers in the handshake; 0 (the default) draws a random
  /// one. A simulation sets it from its seed, so that a run replays.
  std::uint64_t incarnation = 0;

  remote_options& with_cluster_name(std::string n) {
    cluster_name = std::move(n);
    return *this;
  }
  remote_options& with_bind(node_address a) {
    bind = std::move(a);
    return *this;
  }
  remote_options& with_registry(std::shared_ptr<const message_registry> r) {
    registry = std::move(r);
    return *this;
  }
  remote_options& with_transport(transport_factory f) {
    transport = std::move(f);
    return *this;
  }
  remote_options& with_max_frame_size(std::size_t n) {
    max_frame_size = n;
    return *this;
  }
  remote_options& with_max_queued_connected(std::size_t n) {
    max_queued_connected = n;
    return *this;
  }
  remote_options& with_max_queued_bytes(std::size_t n) {
    max_queued_bytes = n;
    return *this;
  }
  remote_options& with_max_queued_unconnected(std::size_t n) {
    max_queued_unconnected = n;
    return *this;
  }
  remote_options& with_heartbeat(std::chrono::milliseconds interval,
                                 std::chrono::milliseconds unreachable) {
    heartbeat_interval = interval;
    unreachable_after = unreachable;
    return *this;
  }
  remote_options& with_reconnect_backoff(std::chrono::milliseconds min,
                                         std::chrono::milliseconds max) {
    reconnect_backoff_min = min;
    reconnect_backoff_max = max;
    return *this;
  }
  remote_options& with_system_io() {
    on_system_io = true;
    return *this;
  }
  remote_options& with_incarnation(std::uint64_t n) {
    incarnation = n;
    return *this;
  }
};

}  // namespace troupe::cluster
