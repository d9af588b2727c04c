#pragma once
/// The coordinator of one sharded type as a pure state machine: events go in
/// (coordinator_events.hpp) and decisions come out (coordinator_decisions.hpp). It starts no
/// thread, opens no connection and reads no clock, so tests drive it by hand and the cluster layer
/// runs it on whichever node wins the type's election. docs/cluster-coordinator.md explains each
/// rule and why it is safe.
///
/// In short: it decides only while elected and after reading the state at one revision; a
/// region's question is answered from the allocations, or by allocating the shard (create if
/// absent) and answering once that write commits; the shards of a member whose key is gone are
/// reallocated (each write compares the old epochs and that the member's key is still gone); a
/// member whose key exists gives up a shard only through a hand-off, committed once it reported
/// the shard stopped (a rebalance, or the member leaving); each shard has at most one write
/// outstanding; and a write that failed or whose outcome is unknown makes it read the state again
/// instead of retrying.

#include <troupe/core/clock.hpp>
#include <troupe/sharding/coordination/allocation_strategy.hpp>
#include <troupe/sharding/coordination/cluster_view.hpp>
#include <troupe/sharding/coordination/coordinator_decisions.hpp>
#include <troupe/sharding/coordination/coordinator_events.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace troupe::sharding::coordination {

/// The knobs of one type's coordinator.
struct coordinator_settings {
  /// Only members with this role host the type's shards; empty: every member may.
  std::string role;
  /// How often a tick asks the strategy for a rebalance (the spec's `rebalance-interval`).
  duration rebalance_interval = std::chrono::seconds(10);
  /// How long a hand-off may wait for the old owner to stop the shard before it is aborted (the
  /// spec's `hand-off-timeout`); measured on ticks.
  duration handoff_timeout = std::chrono::seconds(10);
};

/// Decides where the shards of one sharded type live.
class coordinator {
 public:
  /// Throws troupe::error(errc::invalid_config) when `strategy` is null.
  coordinator(coordinator_settings settings, std::unique_ptr<allocation_strategy> strategy);

  /// Applies `event` and returns what to do, in order.
  [[nodiscard]] std::vector<coordinator_decision> handle(const coordinator_event& event);

  /// Elected and holding a state read since: the coordinator decides.
  [[nodiscard]] bool deciding() const noexcept;

  /// The allocations as the coordinator knows them (committed writes included).
  [[nodiscard]] const std::map<shard_id, allocation>& allocations() const noexcept {
    return allocations_;
  }

  /// The hand-offs in progress, by shard.
  [[nodiscard]] const std::map<shard_id, handoff>& handoffs() const noexcept { return handoffs_; }

  /// The shards with a write outstanding.
  [[nodiscard]] std::vector<shard_id> shards_in_flight() const;

  /// How many regions it would place shards on now (registered, not proxies, their member
  /// known and holding the type's role); 0 unless it decides.
  [[nodiscard]] std::size_t hosting_regions() const;

  /// Rebalance rounds run since it was made (a round the state of the cluster put off not
  /// counted), for the metrics.
  [[nodiscard]] std::uint64_t rebalance_rounds() const noexcept { return rebalance_rounds_; }

 private:
  // A write decided and not answered yet: the decision itself says what its commit changes.
  using pending_write =
      std::variant<write_allocations, begin_handoffs, commit_handoff, abort_handoff>;
  // When the coordinator first knew of a hand-off (the latest tick then), for its timeout.
  struct handoff_clock {
    store_revision revision = 0;
    time_point since{};
  };
  using out = std::vector<coordinator_decision>;
  // The hosting view of one pass, brought up to date on first use (cached_view): most events
  // need none.
  class lazy_view {
   public:
    explicit lazy_view(coordinator& c) : c_(c) {}
    std::vector<region_view>& get() {
      if (view_ == nullptr) view_ = &c_.cached_view();
      return *view_;
    }

   private:
    coordinator& c_;
    std::vector<region_view>* view_ = nullptr;
  };

  void on(const elected& e, out& o);
  void on(const deposed& e, out& o);
  void on(const state_read& e, out& o);
  void on(const member_put& e, out& o);
  void on(const member_deleted& e, out& o);
  void on(const region_put& e, out& o);
  void on(const region_deleted& e, out& o);
  void on(const allocation_put& e, out& o);
  void on(const allocation_deleted& e, out& o);
  void on(const handoff_put& e, out& o);
  void on(const handoff_deleted& e, out& o);
  void on(const shard_stopped& e, out& o);
  void on(const home_requested& e, out& o);
  void on(const write_committed& e, out& o);
  void on(const write_failed& e, out& o);
  void on(const write_unknown& e, out& o);
  void on(const tick& e, out& o);
  void on(const load_reported& e, out& o);
  void on(const rebalance_requested& e, out& o);

  void reset();
  // Applies a change event unless a read covers it; returns whether it changed anything.
  bool change_applies(store_revision revision, const coordinator_event& event);
  // Returns whether the change changed what the coordinator knows (the watch also brings back
  // the coordinator's own writes, which its commits already recorded).
  bool apply_change(const coordinator_event& event);
  // Every change of allocations_ goes through these, so owned_ stays its index by owner.
  void set_allocation(const allocation& a);
  void erase_allocation(std::map<shard_id, allocation>::iterator it);
  void index_allocations();
  void write_outcome_not_known(write_id id, out& o);
  void reconcile(out& o);
  // Commits or aborts the hand-offs that can act: all of them on a full pass, else those of the
  // shards touched since the last pass.
  void decide_handoffs(bool full, const std::set<shard_id>& touched, lazy_view& view, out& o);
  void decide_handoff(const handoff& h, lazy_view& view, out& o);
  // Runs a round unless one cannot run now (hand-offs or writes in progress, a member leaving);
  // returns whether it ran.
  bool rebalance(out& o);
  // Gives the strategy each shard's rate: its owner's report, else the highest other one.
  void publish_loads();
  [[nodiscard]] bool may_host(const region_info& region) const;
  [[nodiscard]] std::vector<region_view> hosting_view() const;
  // The hosting view kept between passes: built by hosting_view() when there is none, else
  // brought up to date by putting each shard marked stale where the state says it counts.
  std::vector<region_view>& cached_view();
  // The member a shard counts for in the view: the target of its write in flight or of its
  // hand-off, else its owner (an abort in flight keeps it with its owner).
  [[nodiscard]] const member_id* counted_owner(shard_id shard) const;
  // After a change of members or regions: the next pass that needs a view builds it anew.
  void forget_view();
  // The region `id` in `view` (through the index when `view` is the kept one), or null.
  region_view* find_in(std::vector<region_view>& view, const member_id& id);
  // Adds or removes a pick's shard in `view`, marking it for cached_view to set right.
  void add_to(std::vector<region_view>& view, region_view& region, shard_id shard);
  void remove_from(std::vector<region_view>& view, const member_id& region, shard_id shard);
  // Asks the strategy, checks its answer and records the pick in `view`.
  std::optional<member_id> choose(shard_id shard, std::vector<region_view>& view, out& o);
  // Where `a`'s shard should go instead of its owner, or nullopt to leave it there.
  std::optional<handoff_start> plan_move(const allocation& a, std::vector<region_view>& view,
                                         out& o);
  // The region a stopped hand-off gives its shard to, or nullopt to wait for one.
  std::optional<member_id> handoff_target(const handoff& h, lazy_view& view, out& o);
  [[nodiscard]] bool handoff_timed_out(const handoff& h) const;
  // Whether `h` is one this coordinator already ended (by a commit or an abort).
  [[nodiscard]] bool handoff_ended(const handoff& h) const;
  void end_handoff(shard_id shard, store_revision handoff_revision, store_revision at);
  // Fills in the write's id and election key, marks its shards busy and emits it.
  void emit(pending_write write, out& o);
  void emit_handoffs(std::vector<handoff_start> starts, out& o);

  coordinator_settings settings_;
  std::unique_ptr<allocation_strategy> strategy_;

  std::optional<store_revision> key_create_revision_;  // set while elected
  bool have_state_ = false;                            // a state_read arrived since elected
  bool reading_ = false;                               // a read_state is outstanding
  bool read_again_ = false;  // something failed while reading: the read may predate it
  store_revision read_revision_ = 0;
  std::vector<std::pair<store_revision, coordinator_event>> early_changes_;

  std::map<member_id, member_info> members_;
  std::map<member_id, region_info> regions_;
  std::map<shard_id, allocation> allocations_;
  // The shards each owner holds in allocations_ (an index, for the passes over dead and leaving
  // owners, which would otherwise walk every allocation at every event).
  std::map<member_id, std::set<shard_id>> owned_;
  std::map<shard_id, handoff> handoffs_;
  std::map<shard_id, handoff_clock> handoff_clocks_;
  // What changed since the last reconcile, so that it revisits only that: the shards whose
  // allocation, hand-off, outstanding write or waiters changed, or everything (full_pass_) after
  // a change of members or regions, a read or a tick. A decision that had to wait for something
  // else (a strategy with no answer, a timeout) is retried at the latest on the next tick.
  std::set<shard_id> touched_;
  bool full_pass_ = true;
  // The hosting view kept between passes (cached_view), the position of each region in it, the
  // region each shard was last put in, the shards whose place may be wrong since (touched,
  // written or picked), and the shards a pass's picks added, with where.
  std::optional<std::vector<region_view>> view_;
  std::map<member_id, std::size_t> view_index_;
  std::unordered_map<shard_id, std::size_t> view_place_;
  std::set<shard_id> view_stale_;
  std::vector<std::pair<shard_id, std::size_t>> view_picks_;
  // The revision of this coordinator's commit or abort that ended each shard's last hand-off,
  // until a read or the watch has passed it: older copies of that hand-off must not come back.
  std::map<shard_id, store_revision> handoffs_ended_;
  std::map<write_id, pending_write> writes_;
  std::map<shard_id, write_id> busy_;
  std::map<shard_id, std::vector<member_id>> waiters_;
  write_id next_write_id_ = 1;
  std::optional<time_point> last_now_;  // the latest tick's time
  std::optional<time_point> last_rebalance_;
  bool rebalance_wanted_ = false;  // an operator's request waits for a round that can run
  std::uint64_t rebalance_rounds_ = 0;
  // The regions' latest load reports (advice: kept across reads, dropped with the member).
  std::map<member_id, std::vector<shard_load>> loads_;
};

}  // namespace troupe::sharding::coordination
