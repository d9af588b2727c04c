#pragma once
/// The keys a sharded type's coordinator reads and writes in the consensus store
/// (P = /troupe/<cluster>; member keys are in cluster/membership/members.hpp):
/// - `P/coord/<type>/<leaseHex>`: a candidate's election key, under its lease; the lowest create
///   revision leads; the value is the candidate's node id.
/// - `P/regions/<type>/<node>#<leaseHex>`: a region's registration, under the node's lease; the
///   value is `proxy=true` or `proxy=false`.
/// - `P/alloc/<type>/<shard>`: a shard's owner (`node=` and `incarnation=` lines), no lease,
///   written only by the coordinator; its mod revision is the shard's epoch.
/// And the one transaction a `write_allocations` decision becomes.

#include <troupe/cluster/membership/consensus_store.hpp>
#include <troupe/sharding/coordination/cluster_view.hpp>
#include <troupe/sharding/coordination/coordinator_decisions.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace troupe::cluster {

/// Throws std::invalid_argument unless `type` can name a key segment (non-empty, no '/', '#' or
/// newline).
void check_type_name(std::string_view type);

/// `P/coord/<type>/`.
std::string coord_prefix(std::string_view cluster, std::string_view type);
/// `P/coord/<type>/<leaseHex>`.
std::string coord_key(std::string_view cluster, std::string_view type, lease_id lease);

/// `P/regions/<type>/`.
std::string regions_prefix(std::string_view cluster, std::string_view type);
/// `P/regions/<type>/<node>#<leaseHex>`.
std::string region_key(std::string_view cluster, std::string_view type,
                       const sharding::coordination::member_id& id);
/// The region key's value.
std::string encode_region(const sharding::coordination::region_info& region);
/// Parses a region key and value; nullopt for anything this layout does not describe.
std::optional<sharding::coordination::region_info> decode_region(std::string_view cluster,
                                                                 std::string_view type,
                                                                 std::string_view key,
                                                                 std::string_view value);
/// The member a region key names (for a deletion, which carries no value).
std::optional<sharding::coordination::member_id> region_id_of(std::string_view cluster,
                                                              std::string_view type,
                                                              std::string_view key);
/// The member a member key names (for a deletion, which carries no value).
std::optional<sharding::coordination::member_id> member_id_of(std::string_view cluster,
                                                              std::string_view key);

/// Writes a region's key under its member's lease (the incarnation), create-if-absent; `done`
/// gets the revision, errc::invalid_store_request when it exists, or the store's error.
void register_region(consensus_store& store, std::string_view cluster, std::string_view type,
                     const sharding::coordination::region_info& region,
                     std::function<void(std::error_code, revision)> done);

/// `P/alloc/<type>/`.
std::string alloc_prefix(std::string_view cluster, std::string_view type);
/// `P/alloc/<type>/<shard>` (decimal).
std::string alloc_key(std::string_view cluster, std::string_view type, sharding::shard_id shard);
/// The allocation key's value: the owner.
std::string encode_owner(const sharding::coordination::member_id& owner);
/// Parses an allocation key as stored (its mod revision is the epoch); nullopt for anything this
/// layout does not describe.
std::optional<sharding::coordination::allocation> decode_allocation(std::string_view cluster,
                                                                    std::string_view type,
                                                                    const key_value& kv);
/// The shard an allocation key names.
std::optional<sharding::shard_id> shard_of_alloc_key(std::string_view cluster,
                                                     std::string_view type, std::string_view key);

/// The transaction of one `write_allocations` decision (docs/cluster-coordinator.md): all of
/// CreateRevision(own election key) == the decision's key create revision; per shard
/// Version(alloc key) == 0 (create) or ModRevision(alloc key) == expected; Version(dead owner's
/// member key) == 0 when set; then one put per shard, without a lease.
txn_request allocation_txn(std::string_view cluster, std::string_view type,
                           std::string_view own_coord_key,
                           const sharding::coordination::write_allocations& write);

}  // namespace troupe::cluster
