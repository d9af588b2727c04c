#pragma once
/// The regions' load reports in the consensus store (P = /troupe/<cluster>):
/// `P/load/<type>/<node>#<leaseHex>`, under the node's lease, holds one `<shard>=<msgs/s>` line
/// per shard the region hosts. The coordinator's strategy reads them as advice: a report is
/// never compared by a transaction, and one that is stale or missing only skews a rebalance.

#include <troupe/cluster/membership/consensus_store.hpp>
#include <troupe/sharding/coordination/cluster_view.hpp>

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace troupe::cluster {

/// `P/load/<type>/`.
std::string load_prefix(std::string_view cluster, std::string_view type);
/// `P/load/<type>/<node>#<leaseHex>`.
std::string load_key(std::string_view cluster, std::string_view type,
                     const sharding::coordination::member_id& region);

/// The load key's value: the rates rounded to whole messages per second.
std::string encode_loads(std::span<const sharding::coordination::shard_load> loads);
/// Parses a load key and value (lines this layout does not describe are skipped); nullopt for
/// a key that names no region.
std::optional<sharding::coordination::load_report> decode_load_report(std::string_view cluster,
                                                                      std::string_view type,
                                                                      std::string_view key,
                                                                      std::string_view value);
/// The region a load key names (for a deletion, which carries no value).
std::optional<sharding::coordination::member_id> load_region_of(std::string_view cluster,
                                                                std::string_view type,
                                                                std::string_view key);

}  // namespace troupe::cluster
