#pragma once
/// What the coordinator of one sharded type is told: its election, the cluster's state as read
/// from the consensus store and as it changes (members, regions and allocations, each with the
/// revision that made it), a region's question, the outcome of each write it decided, and the
/// time. The cluster layer turns etcd's answers and watch events into these.
///
/// Contract with the feeder: after a `read_state` decision it feeds one state_read (a range of
/// everything at one revision R); change events follow in revision order, and those of a
/// revision ≤ the last read's are ignored. Events of revisions above R that arrive before the
/// read are kept and applied after it.

#include <troupe/core/clock.hpp>
#include <troupe/sharding/coordination/cluster_view.hpp>
#include <troupe/sharding/shard_id.hpp>

#include <cstdint>
#include <variant>
#include <vector>

namespace troupe::sharding::coordination {

/// Names one write the coordinator decided, so its outcome can be reported.
using write_id = std::uint64_t;

/// This node won the election; `key_create_revision` is its election key's create revision
/// (re-read after winning), compared by every write it decides.
struct elected {
  store_revision key_create_revision = 0;
};

/// This node is no longer the coordinator (its key is gone or another key is older); it decides
/// nothing from now on and forgets its state, outstanding writes included.
struct deposed {};

/// Everything read at one revision: the members, the regions of this type, the allocations and
/// the hand-offs in progress (`stopped` set where the old owner's stopped key names it).
struct state_read {
  store_revision revision = 0;
  std::vector<member_info> members;
  std::vector<region_info> regions;
  std::vector<allocation> allocations;
  std::vector<handoff> handoffs;
  /// The regions' load reports (any order).
  std::vector<load_report> loads{};
};

/// A member key was written (a new member, or a change such as leaving).
struct member_put {
  store_revision revision = 0;
  member_info member;
};

/// A member key is gone: its lease expired, it left, or it was evicted.
struct member_deleted {
  store_revision revision = 0;
  member_id id;
};

/// A region of this type registered or changed.
struct region_put {
  store_revision revision = 0;
  region_info region;
};

/// A region of this type is gone.
struct region_deleted {
  store_revision revision = 0;
  member_id id;
};

/// An allocation key was written; its revision is `value.mod_revision`.
struct allocation_put {
  allocation value;
};

/// An allocation key was deleted.
struct allocation_deleted {
  store_revision revision = 0;
  shard_id shard = 0;
};

/// A hand-off key was written; its revision is `value.revision` (`value.stopped` is false).
struct handoff_put {
  handoff value;
};

/// A hand-off key was deleted: committed, aborted, or gone with the lease of the coordinator
/// that began it.
struct handoff_deleted {
  store_revision revision = 0;
  shard_id shard = 0;
};

/// The old owner of `shard` reported, with a key written at `revision`, that the shard no longer
/// runs there for the hand-off named `handoff_revision`.
struct shard_stopped {
  store_revision revision = 0;
  shard_id shard = 0;
  store_revision handoff_revision = 0;
};

/// The region on `requester` asks where `shard` lives.
struct home_requested {
  member_id requester;
  shard_id shard = 0;
};

/// The write `id` (of a write_allocations, begin_handoffs, commit_handoff or abort_handoff)
/// committed at `revision`: the new epoch of each shard it allocated, the name of each hand-off
/// it began.
struct write_committed {
  write_id id = 0;
  store_revision revision = 0;
};

/// The write `id` did not apply: one of its compares failed.
struct write_failed {
  write_id id = 0;
};

/// Whether the write `id` applied is unknown (timeout, lost connection): it may still commit.
struct write_unknown {
  write_id id = 0;
};

/// A region reported its shards' message rates (`report.loads` empty: its report is gone).
/// Advice for the strategy, not state a decision rests on: applied as it comes, in no revision
/// order.
struct load_reported {
  load_report report;
};

/// The time now, on the coordinator's clock; the coordinator reads no clock itself.
struct tick {
  time_point now{};
};

/// An operator asked for a rebalance now (the management API's POST /cluster/rebalance/<type>):
/// the next tick runs a round whatever the rebalance interval, or the first tick after the
/// hand-offs and writes in progress end. Ignored unless the coordinator decides.
struct rebalance_requested {};

/// Everything a coordinator is fed.
using coordinator_event =
    std::variant<elected, deposed, state_read, member_put, member_deleted, region_put,
                 region_deleted, allocation_put, allocation_deleted, handoff_put, handoff_deleted,
                 shard_stopped, home_requested, write_committed, write_failed, write_unknown, tick,
                 load_reported, rebalance_requested>;

}  // namespace troupe::sharding::coordination
