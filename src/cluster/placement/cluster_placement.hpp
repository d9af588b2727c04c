#pragma once
/// The placement of one sharded type on a cluster node: it answers the region's "where does this
/// shard live" from the allocations in the consensus store (docs/cluster.md, "Placement").
///
/// - It registers the type's region under the node's lease (`P/regions/<type>/<node>#<leaseHex>`),
///   reads the members and the type's allocations in one transaction at a revision R, and follows
///   both with one watch on `P/` from R + 1, so members and allocations change in one order.
/// - A shard allocated to this incarnation is `placed_here` only once the store's fence of the
///   shard stands at the allocation's epoch: from then on the previous owner's writes fail, so
///   entities recover here only after the old owner can no longer write.
/// - A shard allocated to a live member elsewhere is `placed_remote` at the allocation's epoch;
///   a shard with no allocation, or whose owner's member key is gone, has `no_home_yet`, and the
///   placement asks the coordinator for a home (again every `retry` until it has one).
/// - A shard being handed off (its hand-off key exists) has `no_home_yet` on every node until the
///   hand-off ends. On its old owner the region stops it; once the region says it has no actor
///   for the shard (released()), the placement reports the shard stopped for that hand-off.
/// - Every change to a home the region asked about reaches the listener (on the store's
///   executor), including the first read and a raised fence.
/// - With a `send` in its options it carries the region's messages to remote homes (to the
///   member's address), and arrive() hands the region what other nodes sent here.
///
/// Threading: home_of() may be called from any thread and never blocks; everything else runs on
/// one strand over the store's executor.

#include <troupe/cluster/membership/consensus_store.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/persistence/records.hpp>
#include <troupe/sharding/coordination/cluster_view.hpp>
#include <troupe/sharding/placement.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

namespace troupe::persistence {
class plugin;
}

namespace troupe::cluster {

struct member_record;

/// Raises the store's fence of a shard to an epoch and answers what it found (raised or
/// superseded), or an error. The answer may come on any thread.
using fence_raiser =
    std::function<void(sharding::shard_id, sharding::shard_epoch,
                       std::function<void(std::error_code, persistence::fence_raise)>)>;

/// The fence raiser of `type` over `store` (a journal's plugin).
fence_raiser raise_fences_in(std::shared_ptr<persistence::plugin> store, std::string type);

/// Asks the type's coordinator, wherever it runs, for the home of a shard; the answer comes as an
/// allocation in the store. Must not block.
using home_request = std::function<void(sharding::shard_id)>;

/// Sends one message of the type (a `const M*`) for an entity of a shard to the node listening
/// at `address`, which owns the shard at the epoch. Throws when it cannot; must not block.
using remote_delivery =
    std::function<void(const std::string& address, sharding::shard_id, sharding::shard_epoch,
                       const std::string& entity_id, const void* message, const untyped_ref&,
                       const sharding::origin_stamp&)>;

/// This node's round for one shard (sharding::origin_stamp::round), read at each send.
using round_counter = std::shared_ptr<const std::atomic<std::uint32_t>>;

/// Makes the link (placement::link_to) by which senders send a shard's messages to the node
/// listening at `address`, which owns the shard at the epoch; they carry this node's `run` and
/// the round `round` holds when each is sent. Throws when it cannot.
using remote_linker = std::function<std::shared_ptr<sharding::placement::remote_link>(
    const std::string& address, sharding::shard_id, sharding::shard_epoch, std::int64_t run,
    round_counter round)>;

/// Sends a flush marker (placement::send_flush) for a shard to the node listening at `address`,
/// on the path of the messages sent there; `reply_to` gets the answer (empty: this node's
/// delivery endpoint); `origin` names the node whose marker it is. Throws when it cannot; must
/// not block.
using flush_delivery = std::function<void(const std::string& address, sharding::shard_id,
                                          sharding::shard_epoch, std::uint64_t token,
                                          const untyped_ref& reply_to, const std::string& origin)>;
/// Answers a flush marker to `reply_to` (a node's delivery endpoint). Must not block.
using flush_answer =
    std::function<void(const untyped_ref& reply_to, sharding::shard_id, std::uint64_t token)>;

struct cluster_placement_options {
  /// The cluster name (P = /troupe/<cluster>).
  std::string cluster;
  /// The sharded type's name (a key segment).
  std::string type;
  /// This node's incarnation: its id and lease.
  sharding::coordination::member_id self;
  /// The revision its member key was written at. An allocation to this incarnation is written
  /// after it, so a delivery addressed at an older epoch was meant for an earlier run of this
  /// node (or another node) and is refused (meant_for_an_earlier_run).
  revision joined_at = 0;
  /// A proxy region routes and never hosts a shard.
  bool proxy = false;
  /// How long before a home request, a failed read, registration or fence raise is repeated.
  duration retry = std::chrono::milliseconds(500);
  /// Carries messages to remote homes; empty: they wait in the region.
  remote_delivery send;
  /// Makes links for senders that send to remote homes themselves (with `send`); empty: they
  /// go through `send`.
  remote_linker link;
  /// Carry flush markers and their answers (with `send`).
  flush_delivery send_flush;
  flush_answer answer_flush;
  /// How long this node's flush may wait for its answer before the region sends on anyway (a
  /// marker lost with a node that is still a member: only a node that is itself stuck).
  duration flush_timeout = std::chrono::seconds(5);
  /// The node's standing, whose deadline its lease keeper sets: the entities this placement
  /// hosts check it. Null: one that only fencing revokes.
  std::shared_ptr<troupe::detail::node_standing> standing;
  /// How often the region's load report (each hosted shard's message rate) is written for the
  /// coordinator's strategy; zero: never.
  duration load_interval = duration::zero();
};

/// One sharded type's placement on one cluster node.
class cluster_placement final : public sharding::placement,
                                public std::enable_shared_from_this<cluster_placement> {
 public:
  /// Registers the region and starts reading. `raise_fence` may be empty for a type that writes
  /// nothing to a store (nothing to fence). Throws std::invalid_argument for a bad type name, a
  /// missing store, clock or home request, or an incarnation that is not a lease.
  static std::shared_ptr<cluster_placement> start(std::shared_ptr<consensus_store> store,
                                                  std::shared_ptr<troupe::clock> clock,
                                                  cluster_placement_options options,
                                                  fence_raiser raise_fence, home_request ask);
  ~cluster_placement() override;

  [[nodiscard]] sharding::shard_home home_of(sharding::shard_id shard) override;
  [[nodiscard]] sharding::shard_home peek_home(sharding::shard_id shard) override;
  void set_listener(home_listener listener) override;
  [[nodiscard]] std::string self_node() const override { return options_.self.node; }
  [[nodiscard]] bool routes_remote() const noexcept override {
    return static_cast<bool>(options_.send);
  }
  /// Throws cluster_error(node_unreachable) when `home`'s node is no member any more.
  void send_remote(const sharding::placed_remote& home, sharding::shard_id shard,
                   const std::string& entity_id, const void* message, const untyped_ref& sender,
                   const sharding::origin_stamp& passed_on) override;
  /// Throws cluster_error(node_unreachable) when `home`'s node is no member any more.
  [[nodiscard]] std::shared_ptr<remote_link> link_to(const sharding::placed_remote& home,
                                                     sharding::shard_id shard) override;
  void set_arrival_handler(arrival_handler handler) override;
  void set_delivery_counter(delivery_counter counter) override;
  /// From now on every shard allocated to this node counts as asked about (remember entities).
  void track_hosted_shards() override;
  /// The region has no actor for `shard` and starts one only on a placed_here answer: a shard
  /// this node hands off is reported stopped (once the region asked its home during the
  /// hand-off, so the answer it acted on was this hand-off's).
  void released(sharding::shard_id shard) override;
  /// Some shard is allocated to this node, or is being handed off from it.
  [[nodiscard]] bool owns_shards() const;
  /// The shards still allocated here and how far each one's hand-off got, for the log of a
  /// leave that waits ("shard 24: hand-off asked, not released"); empty when none is.
  [[nodiscard]] std::string owned_shards_progress() const;
  bool send_flush(const sharding::placed_remote& home, sharding::shard_id shard,
                  std::uint64_t token, const untyped_ref& reply_to,
                  const std::string& origin) override;
  /// Far apart for any two incarnations (an odd multiplier is a bijection).
  [[nodiscard]] std::uint64_t first_flush_token() const override {
    return static_cast<std::uint64_t>(options_.self.incarnation) * 0x9e3779b97f4a7c15ULL;
  }
  void answer_flush(const untyped_ref& reply_to, sharding::shard_id shard,
                    std::uint64_t token) override;
  /// The answer to this node's flush `token` came (through the delivery endpoint).
  void flushed(sharding::shard_id shard, std::uint64_t token);
  /// A new round for the shard, as when a flush times out (docs/cluster.md, "An old home that
  /// left").
  void flush_abandoned(sharding::shard_id shard) override;
  /// A delivery or flush marker sent at `epoch` was addressed to an earlier run of this node:
  /// what that run held died with it, so passing this one on would put it behind its sender's
  /// newer messages (docs/cluster.md, "A delivery meant for an earlier run").
  [[nodiscard]] bool meant_for_an_earlier_run(sharding::shard_epoch epoch) const noexcept {
    return epoch > 0 && epoch < options_.joined_at;
  }
  /// Whether a message for `shard` with `stamp` comes too late: its node (this one or another)
  /// gave up waiting for a flush of the shard after sending it, and newer messages of that node
  /// went on without it (docs/cluster.md, "A flush that times out"). Remembers the newest round
  /// seen of each other run.
  [[nodiscard]] bool overtaken(sharding::shard_id shard, const sharding::origin_stamp& stamp);
  /// Hands the region a message another node sent here, taking it; false, leaving it, when no
  /// region listens (any more, or already more than a few before the region started: those
  /// wait for it).
  bool arrive(sharding::remote_arrival& arrival);
  /// How many deliveries and flush markers other nodes have sent here so far.
  [[nodiscard]] std::uint64_t arrivals() const { return arrived_.load(std::memory_order_relaxed); }

  /// The region is registered and the first state read is in.
  [[nodiscard]] bool ready() const;
  /// The members now, with the address each one's transport listens at.
  [[nodiscard]] std::vector<std::pair<sharding::coordination::member_id, std::string>> members()
      const;
  /// Where a member's transport listens, if it is a member now.
  [[nodiscard]] std::optional<std::string> address_of(const std::string& node) const;
  [[nodiscard]] std::string node_of_run(std::int64_t run) const override;
  /// This node hosts no shard any more (it leaves, or with `fenced` it fenced itself): the
  /// shards allocated to it have no home as far as it can tell, until they are allocated
  /// elsewhere; it goes on reading, so its region keeps routing to the other nodes. Fenced, the
  /// listener hears of every shard (the region stops them at once, also draining ones).
  void stop_hosting(bool fenced);

  /// This placement ends: from now on no shard has a home here or anywhere as far as this node
  /// can tell, and nothing more is read or asked.
  void stop();
  /// stop() was called.
  [[nodiscard]] bool stopped() const noexcept { return stopped_.load(); }

 private:
  struct token {};

 public:
  cluster_placement(token, std::shared_ptr<consensus_store> store,
                    std::shared_ptr<troupe::clock> clock, cluster_placement_options options,
                    fence_raiser raise_fence, home_request ask);

 private:
  enum class fence_state { raising, raised, superseded, failed };
  struct shard_fence {
    sharding::shard_epoch epoch = 0;
    fence_state state = fence_state::raising;
  };

  /// A hand-off of a shard as this node sees it.
  struct handoff_entry {
    sharding::coordination::handoff value;
    bool asked = false;      // the region asked the shard's home since the hand-off began
    bool released = false;   // the region has no actor for it (from here: the old owner)
    bool reporting = false;  // the stopped report is on its way
    bool reported = false;   // the stopped report is written
  };

  /// A flush this node's region waits for.
  struct own_flush {
    std::string node;
    sharding::shard_id shard = 0;
    time_point give_up;
  };

  // Guarded by mutex_.
  [[nodiscard]] sharding::shard_home home_locked(sharding::shard_id shard) const;
  void index_addresses();
  /// Ends the flushes `done` picks: the region hears `flushed` for each.
  template <class Pred>
  void end_flushes_locked(Pred done);

  // Each step below runs on strand_.
  void register_region();
  void read();
  void watch_from(revision start);
  void on_batch(const watch_batch& batch);
  void find_home(sharding::shard_id shard);
  /// Writes the stopped report of a released shard this node hands off (again on the tick
  /// after a failure).
  void report_stopped(sharding::shard_id shard);
  /// Hand-offs from this node: the region must say when each shard has no actor here.
  void ask_release(const std::vector<sharding::shard_id>& shards);
  void raise_fence(sharding::shard_id shard, sharding::shard_epoch epoch);
  void tick();
  /// Every load_interval: the rates since the last report, written if they changed
  /// (cluster_placement_loads.cpp).
  void report_load();
  /// Recomputes the homes of `shards` (all asked shards when empty) and tells the listener of
  /// each that changed.
  void announce(const std::vector<sharding::shard_id>& shards);
  template <class Step>
  void after_retry(Step step);

  const std::shared_ptr<consensus_store> store_;
  const std::shared_ptr<troupe::clock> clock_;
  const cluster_placement_options options_;
  const fence_raiser raise_fence_;
  const home_request ask_;
  boost::asio::strand<boost::asio::any_io_executor> strand_;
  std::atomic<bool> stopped_{false};
  std::atomic<std::uint64_t> arrived_{0};

  mutable std::mutex mutex_;
  bool registered_ = false;
  bool hosting_ = true;
  bool read_ = false;
  bool track_hosted_ = false;  // track_hosted_shards() was called
  struct member_entry {
    std::string address;
    bool leaving = false;  // it drains its shards: they have no home until they move
  };
  std::map<sharding::coordination::member_id, member_entry> members_;
  /// node -> address of its first incarnation in members_: send_remote's lookup per message.
  std::unordered_map<std::string, std::string> addresses_;
  std::map<sharding::shard_id, sharding::coordination::allocation> allocations_;
  std::map<sharding::shard_id, handoff_entry> handoffs_;
  std::map<sharding::shard_id, shard_fence> fences_;
  /// What the region was last told for each shard it asked about.
  std::map<sharding::shard_id, sharding::shard_home> asked_;
  /// With track_hosted_: counts each shard allocated here as asked about; returns them.
  std::vector<sharding::shard_id> track_hosted_locked();
  home_listener listener_;
  arrival_handler arrivals_;
  delivery_counter counter_;
  bool had_arrivals_handler_ = false;
  /// What arrived before the region started (the type's region key goes out first).
  std::vector<sharding::remote_arrival> early_arrivals_;
  std::map<std::uint64_t, own_flush> own_flushes_;  // by token
  /// Per shard: how many of this node's flushes of it timed out or were abandoned (the round its
  /// messages carry), shared with the links, which read it at each send. A round read at send
  /// time only grows, so messages of one path carry non-decreasing rounds in the order they go
  /// out.
  std::map<sharding::shard_id, std::shared_ptr<std::atomic<std::uint32_t>>> rounds_;
  /// Per shard and other run: the newest round of that run's messages seen here (none: 0).
  std::map<std::pair<sharding::shard_id, std::int64_t>, std::uint32_t> rounds_seen_;
  /// Some round above 0 exists here (own or seen): only then can a round-0 message be late.
  std::atomic<bool> any_round_{false};
  /// The shard's round counter, made on first use.
  const std::shared_ptr<std::atomic<std::uint32_t>>& round_locked(sharding::shard_id shard);
  /// Starts the shard's next round: this node's messages sent from now on are newer than any it
  /// sent before and may still arrive.
  void next_round_locked(sharding::shard_id shard);
  /// This node's stamp for its own messages of `shard`.
  [[nodiscard]] sharding::origin_stamp own_stamp_locked(sharding::shard_id shard) const;

  // Strand-only state.
  std::map<sharding::shard_id, time_point> requested_;  // last home request per homeless shard
  std::uint64_t watch_gen_ = 0;
  std::unique_ptr<watch_handle> watch_;
  timer_id tick_timer_ = 0;
  timer_id load_timer_ = 0;
  std::map<sharding::shard_id, std::uint64_t> last_counts_;  // at last_counted_
  time_point last_counted_{};
  std::string last_load_;  // the value written last
  std::set<timer_id> retry_timers_;
};

}  // namespace troupe::cluster
