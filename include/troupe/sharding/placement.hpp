#pragma once
/// Where a shard of one sharded type lives: the one place that decides it. A region consults its
/// placement for every shard it routes to (first messages, LRU mode, stopping shards) and so do
/// the direct routes senders keep to running shard actors, so no path decides on its own.
///
/// There are three answers: the shard lives *here* (this node's region hosts it), on a *remote*
/// region (a node and the allocation's epoch, which every message to that node carries), or it
/// has *no home yet* (the region buffers the shard's messages until the placement reports a
/// home). One node without a cluster uses single_node_placement, which always answers `here`.
/// The cluster layer implements the seam with membership, the coordinator and remoting: its
/// placement also carries messages to a remote home (send_remote) and hands the region what
/// other nodes' regions sent here (set_arrival_handler).

#include <troupe/core/actor_ref.hpp>
#include <troupe/core/detail/envelope.hpp>
#include <troupe/core/entity_identity.hpp>
#include <troupe/core/node_standing.hpp>
#include <troupe/sharding/shard_id.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace troupe::sharding {

/// A shard's epoch: the revision of the allocation that gave the shard its current owner (the
/// allocation key's mod revision in the consensus store). Epochs of one shard only grow; 0 is
/// the epoch of a shard no allocation placed (a single node).
using shard_epoch = std::int64_t;

/// The shard is hosted by this node's region, at `epoch`.
struct placed_here {
  shard_epoch epoch = 0;

  friend bool operator==(const placed_here&, const placed_here&) = default;
};

/// The shard is hosted by the region on `node`, since the allocation of `epoch`.
struct placed_remote {
  std::string node;
  shard_epoch epoch = 0;

  friend bool operator==(const placed_remote&, const placed_remote&) = default;
};

/// No region hosts the shard yet (or its owner is being replaced): buffer its messages.
struct no_home_yet {
  friend bool operator==(const no_home_yet&, const no_home_yet&) = default;
};

/// One answer of a placement.
using shard_home = std::variant<placed_here, placed_remote, no_home_yet>;

/// Where a message first left its sender's node, kept by every node that passes it on: that
/// node's run (its member incarnation), and how many of its flushes of the shard it had given up
/// on (timed out) when it sent it. Zero `run`: this node's own message. A node refuses a message
/// of an older round than one it has seen from the same run: that run stopped waiting for it
/// and has sent newer messages since (docs/cluster.md, "A flush that times out").
struct origin_stamp {
  std::int64_t run = 0;
  std::uint32_t round = 0;
};

/// A message another node's region sent to an entity whose shard it placed here at `epoch`.
struct remote_arrival {
  shard_id shard = 0;
  shard_epoch epoch = 0;
  std::string entity_id;
  /// The decoded message (an envelope of the type's message type), with the remote sender.
  /// Null for a flush marker.
  std::unique_ptr<troupe::detail::envelope_base> message;
  /// Non-zero: not a message but a flush marker with this token (placement::send_flush), sent at
  /// `epoch`, to be answered to `reply_to` once everything sent before it is delivered; or,
  /// with `flushed`, the end of this node's own flush with this token.
  std::uint64_t flush_token = 0;
  untyped_ref reply_to;
  /// A flush marker's: the node whose region sent it first (nodes that pass it on keep it).
  std::string origin;
  bool flushed = false;
  /// A message's: where it first left its sender's node.
  origin_stamp stamp;
};

/// Answers "where does this shard live" for one sharded type.
class placement {
 public:
  /// Called with a shard whose home changed (it got one, or it moved); the region then reads
  /// home_of() again and flushes or reroutes that shard's buffer.
  using home_listener = std::function<void(shard_id)>;

  virtual ~placement() = default;
  placement() = default;
  placement(const placement&) = delete;
  placement& operator=(const placement&) = delete;

  /// The shard's home as this node knows it now. Never blocks and may be called from any
  /// thread; answering `no_home_yet` also starts finding a home (the cluster asks the
  /// coordinator), reported later through the listener.
  [[nodiscard]] virtual shard_home home_of(shard_id shard) = 0;
  /// The shard's home as this node knows it now, to describe it (introspection): no answer the
  /// region acts on, so a placement that tells its listener only of changes since the region's
  /// last home_of() must not count it, and it starts no search.
  [[nodiscard]] virtual shard_home peek_home(shard_id shard) { return home_of(shard); }

  /// This node's id in the cluster (what placed_remote::node names elsewhere); empty on a
  /// node without a cluster.
  [[nodiscard]] virtual std::string self_node() const { return {}; }

  /// Sets the one listener told about changed homes (replacing any earlier one; an empty
  /// function removes it). It may be called on any thread, never inside home_of().
  virtual void set_listener(home_listener listener) = 0;

  /// The region tells: it has no actor for `shard` now, its last home_of(shard) (just before)
  /// did not answer placed_here, and it starts one only on a later placed_here answer. A
  /// cluster learns from it that a shard it hands off has stopped here. Called on the region's
  /// thread when a shard it was told about has no actor; never blocks.
  virtual void released(shard_id shard) { (void)shard; }

  /// Whether this node lost its shards without choosing to (its lease is gone or in doubt; it
  /// never clears). From then on the entities handle no further message (each becomes a dead
  /// letter: entity_home::standing is standing()), and a running shard whose home went stops at
  /// once instead of draining: nothing may run here once the lease can run out and the shard
  /// start elsewhere. The placement then tells the listener about every shard, also those
  /// already draining.
  [[nodiscard]] bool fenced() const noexcept { return standing_->revoked(); }
  /// What this node's entities check before each message: revoked once fenced(), and lost
  /// earlier still, the moment the lease's deadline passes, when the placement's cluster sets
  /// one (a node resumed after a pause delivers nothing even before its fence is noticed).
  [[nodiscard]] std::shared_ptr<const troupe::detail::node_standing> standing() const noexcept {
    return standing_;
  }

  /// The region starts every shard placed here, asked about or not (remember entities): from
  /// now on the listener also hears of each shard newly placed here that nobody asked about.
  virtual void track_hosted_shards() {}

  /// Reads how many messages each shard was delivered here so far (cumulative; any thread).
  using delivery_counter = std::function<std::vector<std::pair<shard_id, std::uint64_t>>()>;
  /// The region gives the placement its delivery counts to read, from which a cluster reports
  /// each shard's message rate to the coordinator (an empty function removes it).
  virtual void set_delivery_counter(delivery_counter counter) { (void)counter; }

  // -- routing across nodes (a placement without it keeps remote shards' messages waiting) ---
  /// Called with each message other nodes' regions sent here; may be called on any thread.
  /// The handler takes what it keeps out of the arrival (no copy of it per message).
  using arrival_handler = std::function<void(remote_arrival&)>;

  /// Whether send_remote() reaches other nodes.
  [[nodiscard]] virtual bool routes_remote() const noexcept { return false; }
  /// Sends `message` (the type's message type, left where it is: it is encoded before this
  /// returns) for entity `entity_id` of `shard` to the region at `home`, with `sender` (replies
  /// come back across nodes). Throws troupe::error (or another exception) when it cannot: the
  /// message cannot be encoded, or `home` is not a member any more. `passed_on`: the stamp of
  /// a message another node sent here (run 0: this node's own, which the placement stamps).
  virtual void send_remote(const placed_remote& home, shard_id shard, const std::string& entity_id,
                           const void* message, const untyped_ref& sender,
                           const origin_stamp& passed_on) {
    (void)home, (void)shard, (void)entity_id, (void)message, (void)sender, (void)passed_on;
  }
  /// Sets the one handler of arrivals (an empty function removes it).
  virtual void set_arrival_handler(arrival_handler handler) { (void)handler; }

  /// One shard's way to its remote home, which senders use on their own threads while the
  /// region keeps the shard's route open to it: send() acts as send_remote() to that home.
  class remote_link {
   public:
    virtual ~remote_link() = default;
    /// Sends `message` as send_remote() does, with the sender of `held`, the envelope it is in;
    /// safe on any thread. Takes `held` when it sends (the message is encoded from it later,
    /// not copied now); throws when it cannot, leaving `held` as it was.
    virtual void send(const std::string& entity_id, const void* message,
                      std::unique_ptr<troupe::detail::envelope_base>& held) = 0;
  };
  /// A link to `home` for `shard`'s messages. The default goes through send_remote(); a
  /// placement may prepare the way once instead (the connection, the names every message
  /// carries). Throws like send_remote.
  [[nodiscard]] virtual std::shared_ptr<remote_link> link_to(const placed_remote& home,
                                                             shard_id shard);

  // -- keeping each sender's order when a shard moves (docs/cluster.md, "Order") --------------
  /// Sends a flush marker for `shard` to the region at `home`, on the path of the messages sent
  /// there before it. Each region it passes handles it in order with them: where they are
  /// delivered, it is answered to `reply_to`; where they go on, it goes on behind them. Empty
  /// `reply_to`: the marker is this node's own, and its end comes back as a `flushed` arrival:
  /// when answered, or after the placement's flush timeout. (Not when `home`'s key goes: a node
  /// that left gracefully still passes on what it held, and the marker behind it.) False when
  /// this placement does not flush (the default: the region then sends on at once). Throws like
  /// send_remote, also when `home`'s node is no member any more.
  /// `origin`: the node of a marker passed on (remote_arrival::origin); empty for its own.
  virtual bool send_flush(const placed_remote& home, shard_id shard, std::uint64_t token,
                          const untyped_ref& reply_to, const std::string& origin) {
    (void)home, (void)shard, (void)token, (void)reply_to, (void)origin;
    return false;
  }
  /// Where this node's flush tokens start: far from every other node's, so that tokens of
  /// different regions do not meet, and (of two flushes that wait for each other) the lower one
  /// yields. Random by default; a cluster's placement derives it from its node's incarnation,
  /// so that a simulated run replays.
  [[nodiscard]] virtual std::uint64_t first_flush_token() const {
    return (std::uint64_t{std::random_device{}()} << 32U) ^ std::random_device{}();
  }
  /// The node whose run (a member incarnation, as origin_stamp::run) is `run`; empty when it is
  /// not known (not a member now). A yielding region asks it of what it holds (region_actor).
  [[nodiscard]] virtual std::string node_of_run(std::int64_t run) const {
    (void)run;
    return {};
  }
  /// The region could not send its own marker after the messages it sent to an old home of
  /// `shard` (that node is no member any more, or this placement does not flush), and sends on
  /// without waiting. Those messages may still arrive, late: a node that left gracefully passes
  /// on what reaches it, and this node's own queue to it may still hold some. A cluster's
  /// placement starts a new round for the shard, as when a flush times out, so that a node
  /// which has seen the newer messages refuses the older ones.
  virtual void flush_abandoned(shard_id shard) { (void)shard; }
  /// Answers a flush marker: everything sent before it has been handed to the shard here.
  virtual void answer_flush(const untyped_ref& reply_to, shard_id shard, std::uint64_t token) {
    (void)reply_to, (void)shard, (void)token;
  }

 protected:
  /// A placement whose node's lease sets the deadline of `standing` (null: a standing of its
  /// own, lost only when it fences).
  explicit placement(std::shared_ptr<troupe::detail::node_standing> standing)
      : standing_(standing ? std::move(standing)
                           : std::make_shared<troupe::detail::node_standing>()) {}
  /// The node fenced itself: see fenced().
  void mark_fenced() noexcept { standing_->revoke(); }

 private:
  std::shared_ptr<troupe::detail::node_standing> standing_ =
      std::make_shared<troupe::detail::node_standing>();
};

inline std::shared_ptr<placement::remote_link> placement::link_to(const placed_remote& home,
                                                                  shard_id shard) {
  class through_send_remote final : public remote_link {
   public:
    through_send_remote(placement& homes, placed_remote home, shard_id shard)
        : homes_(homes), home_(std::move(home)), shard_(shard) {}
    void send(const std::string& entity_id, const void* message,
              std::unique_ptr<troupe::detail::envelope_base>& held) override {
      homes_.send_remote(home_, shard_, entity_id, message, untyped_ref(held->sender), {});
      held.reset();
    }

   private:
    placement& homes_;
    placed_remote home_;
    shard_id shard_;
  };
  return std::make_shared<through_send_remote>(*this, home, shard);
}

/// The placement of a node without a cluster: every shard lives here, at epoch 0, for ever.
class single_node_placement final : public placement {
 public:
  /// Always `placed_here{0}`.
  [[nodiscard]] shard_home home_of(shard_id) override { return placed_here{}; }
  /// Homes never change, so the listener is never called.
  void set_listener(home_listener) override {}
};

}  // namespace troupe::sharding
