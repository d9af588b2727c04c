#pragma once
/// INTERNAL. Reads a cluster_state from the consensus store: everything under P/ in one range
/// request, so members, regions, coordinators and allocations are of one revision.

#include <troupe/cluster/cluster_state.hpp>
#include <troupe/cluster/membership/consensus_store.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace troupe::cluster {

/// The state `kvs` (the keys under P/ at revision `at`) describe; every member's reachability is
/// left not_connected. Keys this layout does not describe are skipped.
cluster_state decode_cluster_state(std::string_view cluster, revision at,
                                   const std::vector<key_value>& kvs);

/// Reads P/ and decodes it; `done` runs on the store's executor.
void read_cluster_state(consensus_store& store, std::string cluster,
                        std::function<void(std::error_code, cluster_state)> done);

}  // namespace troupe::cluster
