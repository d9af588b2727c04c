#pragma once
// troupe_bench_cluster's `join_rebalance` case: a fourth node joins a loaded cluster of three,
// and the least-shards strategy hands shards off to it. See cluster_rebalance.cpp.

#include "bench_support.hpp"

#include <cstddef>
#include <cstdint>

namespace troupe::bench::rebalance {

/// One run: three hosting nodes and a proxy sending to `entities` entities over 64 shards; a
/// fourth node joins. Value: seconds from the join until every hosting node holds its fair share
/// of the shards (64 / 4) ± 1; fields rounds (the strategy's rebalance rounds that moved shards
/// until then), seconds, lost (messages sent and never handled: must be 0). The store is the
/// etcd in TROUPE_ETCD_ENDPOINTS, else the in-process model.
run_result run(std::size_t workers, std::int64_t entities);

}  // namespace troupe::bench::rebalance
