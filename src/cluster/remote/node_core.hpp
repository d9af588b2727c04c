#pragma once
/// INTERNAL. The machinery behind remote_node. One I/O thread runs the transport and every piece
/// of state marked "I/O thread" below, so those need no locks; what user threads touch (a peer's
/// outgoing queue, the exposed paths) has its own mutex.
///
/// Connections: each node sends on the stream it opened itself (its outbound stream to a peer)
/// and receives on the streams peers opened to it (inbound). So the messages of one sender to
/// one recipient travel one stream, in order.

#include <troupe/cluster/remote_node.hpp>
#include <troupe/core/dead_letters.hpp>
#include <troupe/core/detail/system_messages.hpp>

#include "cluster/clock_timer.hpp"
#include "inbound.hpp"
#include "peer.hpp"
#include "remote_target.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/unordered/unordered_flat_map.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace troupe::cluster::detail {

class node_core : public std::enable_shared_from_this<node_core> {
 public:
  node_core(actor_system& system, remote_options options);

  void start();
  void shutdown();

  // -- any thread ---------------------------------------------------------------------------
  [[nodiscard]] const node_id& self() const noexcept { return self_; }
  [[nodiscard]] const remote_options& options() const noexcept { return options_; }
  [[nodiscard]] boost::asio::io_context& io() noexcept { return *io_; }
  /// Posts `fn` to the I/O context from any thread; dropped (false) once shutdown destroys the
  /// context, which it may do while another thread is about to post.
  template <class F>
  bool post_io(F&& fn) {
    std::shared_lock lock(io_lifetime_);
    if (io_gone_) return false;
    boost::asio::post(*io_, std::forward<F>(fn));
    return true;
  }
  /// The actor system's clock: heartbeats, handshake deadlines and backoff follow it.
  [[nodiscard]] troupe::clock& clock() const noexcept { return system_.clock(); }
  [[nodiscard]] time_point now() const noexcept { return clock().now(); }
  [[nodiscard]] transport& net() noexcept { return *transport_; }
  [[nodiscard]] bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
  [[nodiscard]] const intrusive_ptr<actor_target>& anchor() const noexcept { return anchor_; }
  /// The peer at `address`, created on first use.
  std::shared_ptr<peer> peer_at(const node_address& address);
  /// The peer at `address` if one was ever made, without making one.
  std::shared_ptr<peer> known_peer(const node_address& address);
  void expose(const untyped_ref& ref);
  intrusive_ptr<actor_target> exposed(const std::string& path);
  remote_stats stats() const;
  std::vector<peer_status> peers() const;
  troupe::dead_letter_office& dead_letters() noexcept;
  /// Membership, not heartbeats, says when a node is gone (remote_node::follow_membership).
  [[nodiscard]] bool membership_decides() const noexcept {
    return membership_decides_.load(std::memory_order_acquire);
  }
  void follow_membership() noexcept { membership_decides_.store(true, std::memory_order_release); }
  /// The node at `address` left the cluster: what depends on it fails or ends now.
  void node_left(const node_address& address, std::string reason, bool graceful);
  /// A new incarnation of a node is a member at `address`: the left mark goes.
  void node_joined(const node_address& address);
  /// This node is no member any more: its asks' answers will not come (see remote_node).
  void left_cluster(std::string reason);

  // -- I/O thread ---------------------------------------------------------------------------
  /// A local target as other nodes know it: an id assigned on first use, its path, and whether
  /// it is temporary (an ask's reply target).
  struct exported {
    std::uint64_t id = 0;
    std::string path;
    bool temporary = false;
  };
  /// The reference is valid until the next export (the map moves its entries).
  const exported& export_target(actor_target* t);
  /// A local target by export id or path; null when unknown or stopped.
  intrusive_ptr<actor_target> resolve(const recipient_spec& spec);
  /// The target of a ref read from a message sent by `sender` (the node that wrote it).
  intrusive_ptr<actor_target> resolve_ref(const wire_ref& ref, const node_id& sender);
  void encode_ref(persistence::byte_writer& w, actor_target* t, peer* to);
  /// Why asks of this node fail at once (left_cluster() came); empty while it is a member.
  [[nodiscard]] const std::string& left_reason() const noexcept { return left_reason_; }
  /// An inbound stream ended.
  void forget(inbound* in);
  /// `in` was handshaken by `run`. A node sends on one stream at a time, so the streams of the
  /// same run accepted before `in` were given up by it: they are closed unread, or what a
  /// partition held in them would arrive behind what `in` carries (a TCP connection the sender
  /// left keeps retransmitting until the peer resets it). False, closing nothing, when a stream
  /// of the run accepted after `in` is up already (`in` is the stale one).
  [[nodiscard]] bool supersede(const inbound& in, const node_id& run);

  struct counters {
    std::atomic<std::uint64_t> sent{0}, received{0}, frames_refused{0}, undecodable{0},
        overflows{0}, refused{0}, peers_lost{0}, peers_unreachable{0}, bytes_sent{0},
        bytes_received{0}, frames_sent{0}, frames_received{0};
  } counters;

 private:
  void accept(std::shared_ptr<stream> s);
  void schedule_tick();
  /// Closes peers, inbound streams and the transport; on the I/O thread (or its driver).
  void close_on_io();
  void sweep_exports();

  actor_system& system_;
  remote_options options_;
  node_id self_;
  /// Our own, run by thread_; with manual scheduling the system's, run by its driver (a
  /// simulation), and no thread of ours.
  boost::asio::io_context* io_ = nullptr;
  std::unique_ptr<boost::asio::io_context> own_io_;
  std::shared_mutex io_lifetime_;  // post_io holds it shared; shutdown, to end the context
  bool io_gone_ = false;
  /// Keeps the I/O thread running until shutdown has run on it: without it, the thread could
  /// return from `run` when the last timer gives up on seeing `closed_`, and shutdown would
  /// wait forever for a handler nobody runs.
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread thread_;
  std::shared_ptr<transport> transport_;
  intrusive_ptr<actor_target> anchor_;
  std::atomic<bool> closed_{false};
  std::atomic<bool> membership_decides_{false};
  std::optional<clock_timer> tick_timer_;
  std::string left_reason_;  // I/O thread

  mutable std::mutex mutex_;  // peers_ and exposed_
  std::unordered_map<node_address, std::shared_ptr<peer>> peers_;
  std::unordered_map<std::string, intrusive_ptr<actor_target>> exposed_;

  // I/O thread.
  std::uint64_t next_export_ = 1;
  boost::unordered_flat_map<std::uint64_t, intrusive_ptr<actor_target>> exports_;
  boost::unordered_flat_map<actor_target*, exported> export_ids_;
  std::vector<std::shared_ptr<inbound>> inbound_;
};

/// Set while the I/O thread encodes or decodes a message, so that actor refs inside it can
/// be written and read (ref_codec.hpp).
struct codec_scope {
  node_core* core;
  peer* to;             // encoding: the destination
  const node_id* from;  // decoding: the node that wrote the message
  codec_scope(node_core* c, peer* t, const node_id* f);
  ~codec_scope();
  codec_scope(const codec_scope&) = delete;
  codec_scope& operator=(const codec_scope&) = delete;
};

/// The registry of the remoting encoding or decoding on this thread now; null outside a
/// codec_scope. A message that carries another message reads it through it.
const message_registry* registry_in_scope() noexcept;

}  // namespace troupe::cluster::detail
