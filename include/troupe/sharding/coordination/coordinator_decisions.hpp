#pragma once
/// What the coordinator of one sharded type decides, as plain data the cluster layer carries
/// out. Writes become one consensus-store transaction each, whose compares make them safe
/// whatever the coordinator's view or clock says (see docs/cluster-coordinator.md):
/// - CreateRevision(own election key) == `coordinator_key_create_revision`;
/// - per shard, Version(alloc key) == 0 when `expected_mod_revision` is 0 (create), else
///   ModRevision(alloc key) == `expected_mod_revision` (move);
/// - when `dead_owner` is set, Version(that member's key) == 0;
/// then one put per shard. The outcome comes back as write_committed, write_failed (a compare
/// failed) or write_unknown.

#include <troupe/sharding/coordination/cluster_view.hpp>
#include <troupe/sharding/coordination/coordinator_events.hpp>
#include <troupe/sharding/placement.hpp>
#include <troupe/sharding/shard_id.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace troupe::sharding::coordination {

/// At most this many shards per write: with the coordinator's compare and a dead owner's, a
/// transaction stays within etcd's 128 operations.
inline constexpr std::size_t max_shards_per_write = 126;

/// Read members, regions and allocations at one revision, and feed the result as state_read.
struct read_state {
  friend bool operator==(const read_state&, const read_state&) = default;
};

/// One shard of a write: give `shard` to `owner` if its allocation is still at
/// `expected_mod_revision` (0: no allocation exists).
struct allocation_write {
  shard_id shard = 0;
  member_id owner;
  store_revision expected_mod_revision = 0;

  friend bool operator==(const allocation_write&, const allocation_write&) = default;
};

/// Write allocations in one transaction (1 to max_shards_per_write shards).
struct write_allocations {
  write_id id = 0;
  store_revision coordinator_key_create_revision = 0;
  std::vector<allocation_write> shards;
  /// Set when the shards are taken from a member that is gone: its key must still be gone.
  std::optional<member_id> dead_owner;

  friend bool operator==(const write_allocations&, const write_allocations&) = default;
};

/// Tell `requester` that `shard` lives on `owner` since `epoch`.
struct answer_home {
  member_id requester;
  shard_id shard = 0;
  member_id owner;
  shard_epoch epoch = 0;

  friend bool operator==(const answer_home&, const answer_home&) = default;
};

/// At most this many shards per begin_handoffs: two compares each, plus the coordinator's, stay
/// within etcd's 128 operations.
inline constexpr std::size_t max_handoffs_per_write = 63;

/// One shard of a begin_handoffs: `shard` should leave `from`, if its allocation is still at
/// `expected_mod_revision`, for `to`.
struct handoff_start {
  shard_id shard = 0;
  member_id from;
  member_id to;
  store_revision expected_mod_revision = 0;

  friend bool operator==(const handoff_start&, const handoff_start&) = default;
};

/// Start hand-offs in one transaction (1 to max_handoffs_per_write shards): all of
/// CreateRevision(own election key) == `coordinator_key_create_revision`; per shard
/// ModRevision(alloc key) == expected and Version(hand-off key) == 0; then one put of each
/// hand-off key (from, to, the expected epoch) under the coordinator's lease. The transaction's
/// revision names each hand-off. Why: the old owner stops the shard when it sees the key, and
/// every region holds the shard's messages until the key is gone.
struct begin_handoffs {
  write_id id = 0;
  store_revision coordinator_key_create_revision = 0;
  std::vector<handoff_start> shards;

  friend bool operator==(const begin_handoffs&, const begin_handoffs&) = default;
};

/// The old owner stopped the shard: give it to `to`. All of CreateRevision(own election key) ==
/// `coordinator_key_create_revision`, ModRevision(alloc key) == `expected_mod_revision` and
/// ModRevision(hand-off key) == `handoff_revision`; then put the allocation (its revision is the
/// shard's new epoch) and delete the hand-off and stopped keys, in one transaction.
struct commit_handoff {
  write_id id = 0;
  store_revision coordinator_key_create_revision = 0;
  shard_id shard = 0;
  member_id to;
  store_revision expected_mod_revision = 0;
  store_revision handoff_revision = 0;

  friend bool operator==(const commit_handoff&, const commit_handoff&) = default;
};

/// Give up a hand-off: the shard stays with its owner at its epoch. All of
/// CreateRevision(own election key) == `coordinator_key_create_revision` and
/// ModRevision(hand-off key) == `handoff_revision`; then delete the hand-off and stopped keys.
struct abort_handoff {
  write_id id = 0;
  store_revision coordinator_key_create_revision = 0;
  shard_id shard = 0;
  store_revision handoff_revision = 0;
  /// Why, for the log: the old owner did not stop it in time, or is gone.
  std::string reason;

  friend bool operator==(const abort_handoff&, const abort_handoff&) = default;
};

/// The allocation strategy answered with a region that may not host the type (a proxy, a member
/// without the role, a region not offered); the shard stays without a home and is retried.
struct strategy_error {
  shard_id shard = 0;
  std::string message;

  friend bool operator==(const strategy_error&, const strategy_error&) = default;
};

/// Everything a coordinator decides.
using coordinator_decision =
    std::variant<read_state, write_allocations, answer_home, begin_handoffs, commit_handoff,
                 abort_handoff, strategy_error>;

}  // namespace troupe::sharding::coordination
