#pragma once
/// INTERNAL. The machinery behind remote_node. One I/O thread runs the transport and every piece
/// of state marked "I/O thread" below, so those need no locks; what user threads touch (a peer's
/// outgoing queue, the exposed paths) has its own mutex.
///
/// Connections: each node sends on the stream it opened itself (its outbound stream to a peer)
/// and receives on the streams peers opened to it (inbound). So the messages of one sender to
/// one recipient travel one stream, in order.

#include <troupe/cluster/remote_node.hpp>
#include <troupe/cluster/wire/frame.hpp>
#include <troupe/core/dead_letters.hpp>
#include <troupe/core/detail/system_messages.hpp>

#include "protocol.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/unordered/unordered_flat_map.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace troupe::cluster::detail {

using troupe::detail::actor_target;
using troupe::detail::envelope_base;
using troupe::detail::intrusive_ptr;
using troupe::detail::system_message;
using clock_type = std::chrono::steady_clock;

class node_core;
class peer;

/// The target of a ref to an actor on another node.
class remote_target final : public actor_target {
 public:
  remote_target(std::shared_ptr<peer> p, std::uint64_t incarnation, std::uint64_t export_id,
                std::string path, bool temporary);

  void enqueue(envelope_base* e) noexcept override;
  /// The receiving node checks and converts the type, so both sends are the same here.
  void enqueue_any(envelope_base* e) noexcept override { enqueue(e); }
  void send_system(system_message* m) noexcept override;
  /// A message with this target as its sender was lost on the way: an ask on the other node
  /// then fails at once.
  void notify_undelivered(std::error_code code, const std::string& reason) noexcept override;
  [[nodiscard]] std::string path() const override;
  [[nodiscard]] troupe::detail::system_impl* owner() const noexcept override;
  [[nodiscard]] bool is_terminated() const noexcept override {
    return terminated_.load(std::memory_order_acquire);
  }

  [[nodiscard]] peer& target_peer() const noexcept { return *peer_; }
  [[nodiscard]] std::uint64_t incarnation() const noexcept { return incarnation_; }
  [[nodiscard]] bool temporary() const noexcept { return temporary_; }
  [[nodiscard]] recipient_spec spec() const { return {export_id_, path_}; }
  [[nodiscard]] std::uint64_t export_id() const noexcept { return export_id_; }
  [[nodiscard]] const std::string& actor_path() const noexcept { return path_; }
  void mark_terminated() noexcept { terminated_.store(true, std::memory_order_release); }

  // I/O thread: the slot this recipient has on the peer's current outbound stream.
  std::uint64_t slot = 0;
  std::uint64_t slot_stream = 0;

 private:
  std::shared_ptr<peer> peer_;
  std::uint64_t incarnation_;  // 0: whichever incarnation runs there
  std::uint64_t export_id_;    // 0: addressed by path
  std::string path_;
  bool temporary_;
  std::atomic<bool> terminated_{false};
};

/// A message waiting for its peer's stream.
struct outgoing {
  envelope_base* message;
  intrusive_ptr<remote_target> to;
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

  // -- I/O thread ---------------------------------------------------------------------------
  /// Writes what is queued when the stream is up and idle; connects when there is none.
  void flush();
  /// Appends a system frame for the peer, sent before queued messages.
  void send_system_frame(system_kind kind, std::uint64_t key, const recipient_spec* spec,
                         const std::string* reason);
  /// Heartbeats, handshake timeout, failure detection.
  void tick(clock_type::time_point now);
  /// Any frame from the peer (on any stream) shows it is alive.
  void heard_from() { last_heard_ = clock_type::now(); }
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
  void track_ask(intrusive_ptr<actor_target> promise) { asks_.push_back(std::move(promise)); }
  /// The peer is gone (unreachable, restarted, shut down): fail what depends on it.
  void lost(errc why, const std::string& reason, bool shutting_down = false);
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
  void encode(outgoing& item, byte_buffer& out);
  void write(byte_buffer bytes);
  void dead_letter(outgoing& item, std::error_code code, const std::string& reason) noexcept;

  std::shared_ptr<node_core> core_;
  node_address address_;
  std::atomic<std::uint64_t> incarnation_{0};

  // Guarded by mutex_ (user threads push, the I/O thread takes).
  std::mutex mutex_;
  std::vector<outgoing> queue_;
  bool flush_posted_ = false;
  bool connected_ = false;
  bool unreachable_ = false;

  // I/O thread.
  state state_ = state::idle;
  std::shared_ptr<stream> stream_;
  std::uint64_t generation_ = 0;  // counts streams, so a late callback of an old one is ignored
  wire::frame_decoder decoder_;
  bool writing_ = false;
  byte_buffer control_;
  std::vector<outgoing> batch_;
  byte_buffer spare_;
  std::uint64_t next_slot_ = 1;
  std::unordered_map<const message_registry::entry*, std::uint64_t> manifest_slots_;
  const std::type_info* last_type_ = nullptr;
  const message_registry::entry* last_entry_ = nullptr;
  clock_type::time_point last_heard_{};
  clock_type::time_point state_since_{};
  std::chrono::milliseconds backoff_{0};
  std::unique_ptr<boost::asio::steady_timer> reconnect_timer_;
  std::vector<intrusive_ptr<actor_target>> asks_;
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

/// One stream a peer opened to us.
class inbound : public std::enable_shared_from_this<inbound> {
 public:
  inbound(node_core& core, std::shared_ptr<stream> s);
  void start();
  void close() { stream_->close(); }

 private:
  void on_data(std::span<const std::byte> bytes);
  void on_frame(const wire::frame_view& f);
  void on_handshake(const wire::frame_view& f);
  void on_message(persistence::byte_reader& r);
  void on_system(persistence::byte_reader& r);
  void reply(wire::frame_kind kind, const std::function<void(byte_buffer&)>& fill);
  void refuse(const std::string& reason);
  void send_pending();
  actor_target* resolve_recipient(persistence::byte_reader& r, std::string& described);

  node_core& core_;
  std::shared_ptr<stream> stream_;
  wire::frame_decoder decoder_;
  std::shared_ptr<peer> peer_;  // known after the handshake
  node_id from_;
  bool writing_ = false;
  bool closing_ = false;
  byte_buffer pending_writes_;
  std::vector<intrusive_ptr<actor_target>> recipients_;  // by slot
  std::vector<std::string> recipient_names_;
  std::vector<const message_registry::entry*> manifests_;  // by slot
  std::vector<std::string> manifest_names_;
  std::optional<boost::asio::steady_timer> handshake_timer_;
};

class node_core : public std::enable_shared_from_this<node_core> {
 public:
  node_core(actor_system& system, remote_options options);

  void start();
  void shutdown();

  // -- any thread ---------------------------------------------------------------------------
  [[nodiscard]] const node_id& self() const noexcept { return self_; }
  [[nodiscard]] const remote_options& options() const noexcept { return options_; }
  [[nodiscard]] boost::asio::io_context& io() noexcept { return *io_; }
  [[nodiscard]] transport& net() noexcept { return *transport_; }
  [[nodiscard]] bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
  [[nodiscard]] const intrusive_ptr<actor_target>& anchor() const noexcept { return anchor_; }
  /// The peer at `address`, created on first use.
  std::shared_ptr<peer> peer_at(const node_address& address);
  void expose(const untyped_ref& ref);
  intrusive_ptr<actor_target> exposed(const std::string& path);
  remote_stats stats() const;
  troupe::dead_letter_office& dead_letters() noexcept;

  // -- I/O thread ---------------------------------------------------------------------------
  /// The export id of a local target, assigned on first use.
  std::uint64_t export_target(actor_target* t, bool temporary);
  /// A local target by export id or path; null when unknown or stopped.
  intrusive_ptr<actor_target> resolve(const recipient_spec& spec);
  /// A target of a ref read from a message sent by `sender` (the node that wrote it).
  intrusive_ptr<actor_target> decode_ref(persistence::byte_reader& r, const node_id& sender);
  void encode_ref(persistence::byte_writer& w, actor_target* t, peer* to);
  /// An inbound stream ended.
  void forget(inbound* in);

  struct counters {
    std::atomic<std::uint64_t> sent{0}, received{0}, frames_refused{0}, undecodable{0},
        overflows{0}, refused{0}, peers_lost{0};
  } counters;

 private:
  void accept(std::shared_ptr<stream> s);
  void schedule_tick();
  void sweep_exports();

  actor_system& system_;
  remote_options options_;
  node_id self_;
  std::unique_ptr<boost::asio::io_context> io_;
  std::thread thread_;
  std::shared_ptr<transport> transport_;
  intrusive_ptr<actor_target> anchor_;
  std::atomic<bool> closed_{false};
  std::optional<boost::asio::steady_timer> tick_timer_;

  mutable std::mutex mutex_;  // peers_ and exposed_
  std::unordered_map<node_address, std::shared_ptr<peer>> peers_;
  std::unordered_map<std::string, intrusive_ptr<actor_target>> exposed_;

  // I/O thread.
  std::uint64_t next_export_ = 1;
  boost::unordered_flat_map<std::uint64_t, intrusive_ptr<actor_target>> exports_;
  boost::unordered_flat_map<actor_target*, std::uint64_t> export_ids_;
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

}  // namespace troupe::cluster::detail
