#pragma once
/// A node's remoting: it listens for other nodes and makes actor refs work across them. tell,
/// ask, refs inside messages (replies go back across nodes) and death watch behave as locally:
///
///   troupe::actor_system system;
///   troupe::cluster::remote_node node(system, options);   // listens at options.bind
///   auto echo = system.spawn<echo_actor>("echo");
///   node.expose(echo);                                     // reachable by its path
///   // on another node:
///   auto far = node_b.ref_to<echo_msg>(node.self().address, "/user/echo");
///   far.tell(echo_msg{"hi"});
///
/// Across nodes a message is delivered at most once, and messages from one sender to one
/// recipient arrive in the order sent (docs/transport.md). Destroy the node before its system.

#include <troupe/cluster/node_address.hpp>
#include <troupe/cluster/remote_options.hpp>
#include <troupe/core/actor_ref.hpp>
#include <troupe/core/actor_system.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace troupe::cluster {

namespace detail {
class node_core;
/// The target of a ref to `path` on the node at `address`, whatever incarnation runs there.
troupe::detail::intrusive_ptr<troupe::detail::actor_target> remote_target_for(
    node_core& core, const node_address& address, const std::string& path);
}  // namespace detail

/// A message that arrived from another node but could not be decoded (unknown manifest,
/// malformed bytes): published to dead letters with the reason, its bytes kept for inspection.
struct undecodable_message {
  node_id from;
  std::string recipient;
  std::string manifest;
  std::vector<std::byte> payload;
};

/// Counters of a node's remoting, for tests and metrics.
struct remote_stats {
  std::uint64_t messages_sent = 0;
  std::uint64_t messages_received = 0;
  std::uint64_t frames_refused = 0;      // malformed or oversized frames (connection closed)
  std::uint64_t undecodable = 0;         // messages that went to dead letters on arrival
  std::uint64_t queue_overflows = 0;     // messages dropped because a peer's queue was full
  std::uint64_t handshakes_refused = 0;  // by this node or its peers
  std::uint64_t peers_lost = 0;          // peers declared lost: unreachable, restarted or left
  std::uint64_t peers_unreachable = 0;   // connections dropped for silence or failed handshakes
  std::uint64_t bytes_sent = 0;          // written to every stream, frames and headers included
  std::uint64_t bytes_received = 0;      // read from every stream
  std::uint64_t frames_sent = 0;         // messages, system, handshake and heartbeat frames
  std::uint64_t frames_received = 0;     // every well-formed frame read, control frames included
};

/// What a node knows of its connection to another node (remote_node::peers()).
struct peer_status {
  node_address address;
  /// The incarnation that answered the last handshake (0: none has yet).
  std::uint64_t incarnation = 0;
  /// A connection is up now.
  bool connected = false;
  /// The last connection fell silent, or none got through since it was asked for; a handshake
  /// clears it. An unreachable peer is not gone: in a cluster, only its member key decides that.
  bool unreachable = false;
  /// Bytes written to it, over every connection so far.
  std::uint64_t bytes_sent = 0;
  /// Bytes read from it after its handshake, on the streams in both directions.
  std::uint64_t bytes_received = 0;
  /// Frames written to it and read from it (control frames included), on both streams.
  std::uint64_t frames_sent = 0;
  std::uint64_t frames_received = 0;
  /// Connections that completed a handshake (the first, then one per reconnect).
  std::uint64_t connections = 0;
  /// Messages waiting to be written to it now, and the bytes of those already encoded.
  std::size_t queued_messages = 0;
  std::size_t queued_bytes = 0;
};

class remote_node {
 public:
  /// Starts listening at options.bind. Throws troupe::error(errc::invalid_config) for invalid
  /// options (no registry or transport, a zero interval, ...) and cluster_error when it cannot
  /// listen.
  remote_node(actor_system& system, remote_options options);
  /// Shuts down: closes every connection; watchers of remote actors get `terminated` and
  /// pending remote asks fail.
  ~remote_node();
  remote_node(const remote_node&) = delete;
  remote_node& operator=(const remote_node&) = delete;

  /// This node: the address it listens on and its incarnation.
  [[nodiscard]] node_id self() const;

  /// Makes a local actor reachable from other nodes by its path (refs sent inside messages
  /// need no exposing: they carry their own way back).
  void expose(const untyped_ref& ref);

  /// A ref to the actor at `path` (e.g. "/user/echo") on the node at `address`.
  template <class M>
  [[nodiscard]] actor_ref<M> ref_to(const node_address& address, const std::string& path) {
    return actor_ref<M>(detail::remote_target_for(*core_, address, path));
  }

  [[nodiscard]] remote_stats stats() const;
  /// Every node this one has sent to or watched, ordered by address.
  [[nodiscard]] std::vector<peer_status> peers() const;

  /// The message types this node sends and receives.
  [[nodiscard]] std::shared_ptr<const message_registry> registry() const;

  /// Closes every connection and stops listening. Idempotent; the destructor calls it.
  void shutdown();

  /// From now on a cluster's membership, not missed heartbeats, says when a node is gone (a
  /// cluster node calls it when it joins). An unreachable node only delays: watches of its
  /// actors stay, and are placed again when the connection is back; asks to it fail at their
  /// timeout, and tells wait for the connection (bounded). Only node_left() or a restart of
  /// the node ends them.
  void follow_membership();
  /// The node at `address` is no member any more: watchers of its actors get `terminated`,
  /// asks waiting for it fail with errc::node_left, and refs bound to its incarnation are dead.
  /// A later incarnation at the same address is reached as usual. With `graceful` (it left, and
  /// passed on what it was sent first), asks whose message reached it keep waiting for their
  /// reply, which may come from where the message was passed on, or fail at their timeout.
  void node_left(const node_address& address, std::string reason, bool graceful = false);
  /// A new incarnation of a node became a member at `address`: asks to it go through again,
  /// also before either side has connected (until then, asks to a node that left fail at once).
  void node_joined(const node_address& address);
  /// This node is no member any more (it fenced itself): the other nodes refuse what is bound
  /// to its run, so the asks it sent them (and sends from now on) fail at once with
  /// errc::node_left and `reason`, instead of at their timeout.
  void left_cluster(std::string reason);

 private:
  std::shared_ptr<detail::node_core> core_;
};

}  // namespace troupe::cluster
