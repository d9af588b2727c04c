#pragma once
/// INTERNAL. One other node, as this node sees it: the queue of messages for it, the stream this
/// node opened to it (handshake, heartbeats, reconnect with backoff), and what depends on it
/// (remote watches, asks waiting for replies). Methods marked "I/O thread" run only there.

#include <troupe/cluster/errc.hpp>
#include <troupe/cluster/message_registry.hpp>
#include <troupe/cluster/remote_node.hpp>
#include <troupe/cluster/transport.hpp>
#include <troupe/cluster/wire/frame.hpp>

#include "cluster/clock_timer.hpp"
#include "remote_target.hpp"

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <typeinfo>
#include <unordered_map>
#include <vector>

namespace troupe::cluster::detail {

/// A message waiting for its peer's stream.
struct outgoing {
  envelope_base* message;
  intrusive_ptr<remote_target> to;
};

/// A message whose sender ref and payload are encoded (they do not depend on the stream),
/// waiting for the stream: `size` bytes at `offset` of the peer's staging buffer.
struct staged {
  outgoing item;
  const message_registry::entry* entry;
  std::size_t offset;
  std::size_t size;
};

/// Everything about one other node, addressed by where it listens.
class peer : public std::enable_shared_from_this<peer> {
 public:
  peer(std::shared_ptr<node_core> core, node_address address);

  // -- any thread ---------------------------------------------------------------------------
  /// Queues a message for the peer; takes ownership of `e`.
  void push(envelope_base* e, intrusive_ptr<remote_target> to) noexcept;
  [[nodiscard]] const node_address& address() const noexcept { return address_; }
  [[nodiscard]] node_core& core() const noexcept { return *core_; }
  /// The incarnation last seen in a handshake (0 before the first).
  [[nodiscard]] std::uint64_t incarnation() const noexcept {
    return incarnation_.load(std::memory_order_acquire);
  }

  /// Whether a connection is up, or the peer counts as unreachable.
  [[nodiscard]] peer_status status();

  // -- I/O thread ---------------------------------------------------------------------------
  /// Writes what is queued when the stream is up and idle; connects when there is none.
  void flush();
  /// Appends a system frame for the peer, sent before queued messages.
  void send_system_frame(system_kind kind, std::uint64_t key, const recipient_spec* spec,
                         const std::string* reason);
  /// Heartbeats, handshake timeout, failure detection.
  void tick(time_point now);
  /// Any frame from the peer (on any stream) shows it is alive.
  void heard_from();
  /// Counts traffic with the peer, on this node's totals and the peer's own.
  void count_sent(std::size_t frames, std::size_t bytes) noexcept;
  void count_received(std::size_t frames, std::size_t bytes) noexcept;
  /// The peer answered a handshake as `id` (ours, or on an inbound stream as the connector).
  void observed(const node_id& id);
  /// Watches of remote actors on this peer.
  void watch(intrusive_ptr<remote_target> watchee, intrusive_ptr<actor_target> watcher);
  void unwatch(remote_target* watchee, actor_target* watcher);
  void on_terminated(std::uint64_t key);
  /// Watches placed by the peer on local actors.
  void watch_local(std::uint64_t key, const recipient_spec& spec);
  void unwatch_local(std::uint64_t key);
  /// An ask's reply target exported to this peer: failed at once if the peer is lost.
  /// Once this node left the cluster, it fails at once: no node answers an ended run.
  void track_ask(intrusive_ptr<actor_target> promise);
  /// Fails the asks waiting for answers from this peer with errc::node_left: this node is no
  /// member any more, and the peer refuses what is bound to its ended run.
  void fail_asks(const std::string& reason);
  /// The peer is gone (unreachable, restarted, left, shut down): fail what depends on it.
  /// With `keep_sent_asks`, asks whose message was sent keep waiting (a graceful leave).
  void lost(errc why, const std::string& reason, bool shutting_down = false,
            bool keep_sent_asks = false);
  /// The peer's node left the cluster: lost, and its incarnation's refs and watches are dead
  /// until a node answers at the address again.
  void left(const std::string& reason, bool graceful);
  /// A new incarnation of the peer's node is a member: asks to it go through again (on the I/O
  /// thread, after any left() posted before it).
  void rejoined();
  /// Closes the stream for good (node shutdown).
  void close();
  /// Remote targets of this peer's actors received in messages, shared so equal refs compare
  /// equal (not for temporary ones).
  intrusive_ptr<remote_target> target_for(std::uint64_t incarnation, std::uint64_t export_id,
                                          const std::string& path, bool temporary);

 private:
  enum class state { idle, connecting, handshaking, up, backoff, closed };

  void connect();
  void on_stream(std::shared_ptr<stream> s);
  void on_frame(const wire::frame_view& f);
  void on_stream_closed(std::uint64_t generation, std::error_code ec);
  void drop_stream(const std::string& why, bool unreachable);
  void schedule_reconnect();
  /// Encodes what waits into the staging buffer while the stream cannot take it, so that its
  /// size counts against max_queued_bytes.
  void stage();
  /// The registry entry of a message's type; null (and a dead letter) when it has none.
  const message_registry::entry* entry_of(outgoing& item);
  /// True, after a dead letter, when `item` is bound to a run of the node that this peer saw
  /// end: written now, it would reach the new run's actor of the same export number (an answer
  /// to an ask of a run that ended would answer another ask). A run this peer has not met yet
  /// is no ended one: a ref can reach this node before the new run connects to it (a message
  /// passed on by a third node), and the next handshake meets that run.
  bool bound_to_an_ended_run(outgoing& item);
  /// Appends the sender ref and the payload.
  void encode_tail(outgoing& item, const message_registry::entry& entry, byte_buffer& out);
  /// Appends a message frame: the recipient and manifest (slots committed only once the frame
  /// is complete), then `tail` when staged, or the tail encoded now.
  void encode(outgoing& item, const message_registry::entry& entry, byte_buffer& out,
              const std::span<const std::byte>* tail);
  /// Dead-letters what waits to be sent (queued or staged) for which `fail` holds.
  void fail_unsent_if(const std::function<bool(const outgoing&)>& fail, std::error_code code,
                      const std::string& reason);
  /// Dead-letters the staged messages `fail` picks and keeps the others in order.
  void drop_staged_if(const std::function<bool(const outgoing&)>& fail, std::error_code code,
                      const std::string& reason);
  void write(byte_buffer bytes);
  void dead_letter(outgoing& item, std::error_code code, const std::string& reason) noexcept;
  /// A message beyond a queue bound (`bound`, e.g. "1000 messages").
  void overflow(outgoing& item, const std::string& bound) noexcept;

  std::shared_ptr<node_core> core_;
  node_address address_;
  std::atomic<std::uint64_t> incarnation_{0};
  std::atomic<std::uint64_t> bytes_sent_{0};
  std::atomic<std::uint64_t> bytes_received_{0};
  std::atomic<std::uint64_t> frames_sent_{0};
  std::atomic<std::uint64_t> frames_received_{0};
  std::atomic<std::uint64_t> connections_{0};

  // Guarded by mutex_ (user threads push, the I/O thread takes).
  std::mutex mutex_;
  std::vector<outgoing> queue_;
  std::size_t staged_count_ = 0;  // staged_.size(), plus what the I/O thread is staging now
  std::size_t staged_bytes_ = 0;  // staging_.size()
  bool flush_posted_ = false;
  bool connected_ = false;
  bool unreachable_ = false;
  bool left_ = false;  // node_left() came, and no handshake since

  // I/O thread.
  state state_ = state::idle;
  std::deque<std::uint64_t> ended_runs_;  // incarnations seen replaced, the latest few
  /// The run that left (0: none): asks tracked after its leave were sent for the run after it.
  std::uint64_t left_run_ = 0;
  std::shared_ptr<stream> stream_;
  std::uint64_t generation_ = 0;  // counts streams, so a late callback of an old one is ignored
  wire::frame_decoder decoder_;
  bool writing_ = false;
  byte_buffer control_;
  /// Frames appended to control_ or encoded for the next write, counted once written: one count
  /// per write, not per message.
  std::size_t unsent_frames_ = 0;
  std::vector<outgoing> batch_;
  std::vector<staged> staged_;
  byte_buffer staging_;
  byte_buffer spare_;
  std::uint64_t next_slot_ = 1;
  std::unordered_map<const message_registry::entry*, std::uint64_t> manifest_slots_;
  const std::type_info* last_type_ = nullptr;
  const message_registry::entry* last_entry_ = nullptr;
  time_point last_heard_{};
  time_point state_since_{};
  std::chrono::milliseconds backoff_{0};
  std::unique_ptr<clock_timer> reconnect_timer_;
  std::vector<intrusive_ptr<actor_target>> asks_;
  /// Asks sent to this peer before it left gracefully: their answers come from where it passed
  /// their messages on, unless this node leaves the cluster itself (fail_asks).
  std::vector<intrusive_ptr<actor_target>> handed_on_asks_;
  struct remote_watch {
    intrusive_ptr<remote_target> watchee;
    std::vector<intrusive_ptr<actor_target>> watchers;
  };
  std::uint64_t next_watch_key_ = 1;
  std::map<std::uint64_t, remote_watch> watches_;
  std::unordered_map<remote_target*, std::uint64_t> watch_keys_;
  std::map<std::uint64_t, std::pair<intrusive_ptr<actor_target>, intrusive_ptr<actor_target>>>
      local_watches_;  // key -> (watched local actor, its proxy watcher)
  std::unordered_map<std::uint64_t, intrusive_ptr<remote_target>> targets_;
};

}  // namespace troupe::cluster::detail
