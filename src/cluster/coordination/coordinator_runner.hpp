#pragma once
/// Runs one sharded type's coordinator on a node: campaigns for `P/coord/<type>/` under the
/// node's lease, and while it leads feeds the pure state machine
/// (troupe/sharding/coordination/coordinator.hpp) with the store's state and changes, and turns
/// its decisions into transactions and answers. docs/cluster-coordinator.md ("The runner") says
/// why each step is safe.
///
/// - Election: a create-if-absent transaction puts `P/coord/<type>/<leaseHex>` under the lease;
///   one read of the prefix then decides: the node leads when its own key is there with the
///   create revision it campaigned with (the re-check etcd 3.4's Campaign lacks) and no key is
///   older. Otherwise it watches the prefix and reads again when the key just older than its own
///   is deleted. Its own key deleted (lease lost) ends the campaign: a new incarnation runs a new
///   runner.
/// - State: on `read_state` one transaction of ranges (members, the type's regions, allocations,
///   hand-offs and stopped reports) reads everything at one revision R; one watch on `P/` from R +
///   1 feeds the changes in revision order. A lost or compacted watch deposes the coordinator and,
///   if the election still holds, elects it again, which reads afresh.
/// - Writes: each `write_allocations`, `begin_handoffs`, `commit_handoff` and `abort_handoff` is
///   one transaction (coordination_keys.hpp, handoff_keys.hpp); its outcome is fed back as
///   write_committed, write_failed or write_unknown. Hand-off keys go under this node's lease.
///
/// Threading: everything runs on one strand over the store's executor; no call blocks. Public
/// methods may be called from any thread.

#include <troupe/cluster/membership/consensus_store.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/sharding/coordination/allocation_strategy.hpp>
#include <troupe/sharding/coordination/coordinator.hpp>

#include "cluster/cluster_recorder.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace troupe::cluster {

/// Where a coordinator's answers to regions go: the region wiring implements it (over remoting,
/// or directly for the local region). Called on the runner's strand; must not block.
using home_answer_sink = std::function<void(const sharding::coordination::answer_home&)>;

struct coordinator_runner_options {
  /// The cluster name (P = /troupe/<cluster>).
  std::string cluster;
  /// The sharded type's name (a key segment: no '/', '#' or newline).
  std::string type;
  /// This node's incarnation: its id and its lease, which holds the election key.
  sharding::coordination::member_id self;
  sharding::coordination::coordinator_settings settings;
  /// How often the state machine gets a tick.
  duration tick_interval = std::chrono::seconds(1);
  /// How long to wait before repeating a request that failed (campaign, election read, state
  /// read).
  duration retry = std::chrono::milliseconds(500);
  /// Where it records its allocations, hand-offs and rounds; null records nothing.
  std::shared_ptr<cluster_recorder> metrics;
};

/// One type's coordinator on one node: election, feeding, and carrying out decisions.
class coordinator_runner : public std::enable_shared_from_this<coordinator_runner> {
 public:
  /// Starts campaigning. Throws std::invalid_argument for a bad type name, a missing store,
  /// clock or strategy, or an incarnation that is not a lease.
  static std::shared_ptr<coordinator_runner> start(
      std::shared_ptr<consensus_store> store, std::shared_ptr<troupe::clock> clock,
      coordinator_runner_options options,
      std::unique_ptr<sharding::coordination::allocation_strategy> strategy,
      home_answer_sink answers);
  ~coordinator_runner();
  coordinator_runner(const coordinator_runner&) = delete;
  coordinator_runner& operator=(const coordinator_runner&) = delete;

  /// The region on `requester` asks where `shard` lives (ignored unless this node leads: the
  /// region asks again at its retry interval).
  void request_home(sharding::coordination::member_id requester, sharding::shard_id shard);

  /// An operator asks for a rebalance round now (ignored unless this node leads; the round runs
  /// at the next tick that finds no hand-off or write in progress).
  void request_rebalance();

  /// Stops: cancels the watches and timers, feeds nothing more, and resigns (deletes its own
  /// election key while it carries the node's lease). The lease is left alone.
  void stop();

  /// This node has been fed `elected` and not `deposed` since.
  [[nodiscard]] bool leading() const noexcept { return leading_.load(); }
  /// Its own election key is gone (the lease ended): the runner campaigns no more.
  [[nodiscard]] bool lost() const noexcept { return lost_.load(); }
  /// The create revision of its election key (0 before the campaign is answered).
  [[nodiscard]] revision key_create_revision() const noexcept { return my_revision_.load(); }
  /// How many state reads it has fed (each term starts with one; a failed write adds one).
  [[nodiscard]] int state_reads() const noexcept { return state_reads_.load(); }
  /// How many regions it would place shards on now (0 unless it leads and has read the state).
  [[nodiscard]] std::size_t hosting_regions() const noexcept { return hosting_regions_.load(); }
  /// stop() was called.
  [[nodiscard]] bool stopped() const noexcept { return stopped_.load(); }
  /// This runner's election key.
  [[nodiscard]] const std::string& election_key() const noexcept { return key_; }

 private:
  struct token {};

 public:
  coordinator_runner(token, std::shared_ptr<consensus_store> store,
                     std::shared_ptr<troupe::clock> clock, coordinator_runner_options options,
                     std::unique_ptr<sharding::coordination::allocation_strategy> strategy,
                     home_answer_sink answers);

 private:
  // Each step below runs on strand_.
  void campaign();
  void check_election();
  void watch_election(revision start);
  void on_election_batch(const watch_batch& batch);
  void lead();
  void depose();
  void lose();
  void feed(const sharding::coordination::coordinator_event& event);
  void carry_out(const sharding::coordination::coordinator_decision& decision);
  void read_state(std::uint64_t term);
  void on_state(std::uint64_t term, revision at, std::vector<std::vector<key_value>> ranges);
  void watch_state(revision start);
  void on_state_batch(const watch_batch& batch);
  /// Carries out one decided write; its outcome is fed back under `id`, after `committed` runs
  /// (if the write committed).
  void write(sharding::coordination::write_id id, txn_request t,
             std::function<void(coordinator_runner&)> committed = {});
  /// What write() runs when `decision` commits: record_commit, or nothing without metrics.
  [[nodiscard]] std::function<void(coordinator_runner&)> recorder_of(
      const sharding::coordination::coordinator_decision& decision) const;
  /// Records a committed decision in the metrics (set).
  void record_commit(const sharding::coordination::coordinator_decision& decision);
  void tick();
  void halt();

  /// Runs `step` on the strand after `retry`, unless stopped.
  template <class Step>
  void after_retry(Step step);
  /// Wraps a store handler so that it runs `f(self, ec, value)` on the strand, unless stopped.
  template <class T, class F>
  std::function<void(std::error_code, T)> on_strand(F f);

  const std::shared_ptr<consensus_store> store_;
  const std::shared_ptr<troupe::clock> clock_;
  const coordinator_runner_options options_;
  const home_answer_sink answers_;
  const std::string key_;
  boost::asio::strand<boost::asio::any_io_executor> strand_;

  sharding::coordination::coordinator coordinator_;
  std::atomic<bool> stopped_{false};
  std::atomic<bool> leading_{false};
  std::atomic<bool> lost_{false};
  std::atomic<revision> my_revision_{0};
  std::atomic<int> state_reads_{0};
  std::atomic<std::size_t> hosting_regions_{0};

  // Strand-only state.
  bool campaigned_ = false;
  bool checking_ = false;
  bool check_again_ = false;
  std::string waiting_on_;          // the key just older than ours, while we wait
  std::uint64_t term_ = 0;          // +1 on every elected and deposed: older answers are dropped
  std::uint64_t election_gen_ = 0;  // names the current election watch
  std::uint64_t state_gen_ = 0;     // names the current state watch
  std::unique_ptr<watch_handle> election_watch_;
  std::unique_ptr<watch_handle> state_watch_;
  timer_id tick_timer_ = 0;
  std::set<timer_id> retry_timers_;
  // For the metrics: when each hand-off this term began committed, and the rounds recorded.
  std::map<sharding::shard_id, time_point> handoff_began_;
  std::uint64_t rounds_recorded_ = 0;
};

}  // namespace troupe::cluster
