#pragma once
/// The keys of a shard's hand-off in the consensus store (P = /troupe/<cluster>), and the
/// transactions that begin, report, commit and abort one (docs/cluster.md, "Hand-off"):
/// - `P/handoff/<type>/<shard>`: a hand-off in progress, under the coordinator's lease (it ends
///   with the coordinator that began it); the value names the old owner, the new one and the
///   epoch the shard leaves; its mod revision names the hand-off.
/// - `P/stopped/<type>/<shard>`: the old owner's report that the shard no longer runs there,
///   under the old owner's lease; the value names the hand-off it answers.

#include <troupe/cluster/membership/consensus_store.hpp>
#include <troupe/sharding/coordination/cluster_view.hpp>
#include <troupe/sharding/coordination/coordinator_decisions.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace troupe::cluster {

/// `P/handoff/<type>/`.
std::string handoff_prefix(std::string_view cluster, std::string_view type);
/// `P/handoff/<type>/<shard>`.
std::string handoff_key(std::string_view cluster, std::string_view type, sharding::shard_id shard);
/// `P/stopped/<type>/`.
std::string stopped_prefix(std::string_view cluster, std::string_view type);
/// `P/stopped/<type>/<shard>`.
std::string stopped_key(std::string_view cluster, std::string_view type, sharding::shard_id shard);

/// The hand-off key's value.
std::string encode_handoff(const sharding::coordination::handoff& h);
/// Parses a hand-off key as stored (its mod revision names it; `stopped` is false); nullopt for
/// anything this layout does not describe.
std::optional<sharding::coordination::handoff> decode_handoff(std::string_view cluster,
                                                              std::string_view type,
                                                              const key_value& kv);
/// The shard a hand-off key names (for a deletion, which carries no value).
std::optional<sharding::shard_id> shard_of_handoff_key(std::string_view cluster,
                                                       std::string_view type, std::string_view key);
/// Parses a stopped key as stored: the shard and the hand-off it answers.
std::optional<sharding::coordination::shard_stopped> decode_stopped(std::string_view cluster,
                                                                    std::string_view type,
                                                                    const key_value& kv);

/// Begins the decision's hand-offs: CreateRevision(own election key) == the decision's; per
/// shard ModRevision(alloc key) == expected and Version(hand-off key) == 0; then a put of each
/// hand-off key under `coordinator_lease`.
txn_request begin_handoffs_txn(std::string_view cluster, std::string_view type,
                               std::string_view own_coord_key, lease_id coordinator_lease,
                               const sharding::coordination::begin_handoffs& begin);
/// Commits a hand-off: the election, the allocation's and the hand-off's mod revisions
/// compared; then the allocation put and the hand-off and stopped keys deleted.
txn_request commit_handoff_txn(std::string_view cluster, std::string_view type,
                               std::string_view own_coord_key,
                               const sharding::coordination::commit_handoff& commit);
/// Aborts a hand-off: the election and the hand-off's mod revision compared; then the hand-off
/// and stopped keys deleted.
txn_request abort_handoff_txn(std::string_view cluster, std::string_view type,
                              std::string_view own_coord_key,
                              const sharding::coordination::abort_handoff& abort);
/// The old owner's report that `shard` stopped for the hand-off `handoff_revision`: only while
/// that hand-off's key is the one (ModRevision compared), a put of the stopped key under the
/// owner's lease.
txn_request report_stopped_txn(std::string_view cluster, std::string_view type,
                               sharding::shard_id shard,
                               sharding::coordination::store_revision handoff_revision,
                               lease_id owner_lease);

}  // namespace troupe::cluster
