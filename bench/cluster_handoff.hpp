#pragma once
// troupe_bench_cluster's `handoff` case: one shard moved back and forth between two live nodes
// while a third node's region sends to its entities. See cluster_handoff.cpp.

#include "bench_support.hpp"

#include <cstddef>
#include <cstdint>

namespace troupe::bench::handoff {

/// One run: `moves` hand-offs of one shard holding `entities` entities, under a steady load of
/// tells from a proxy node. Value: the p99 in ms, over the moves, from the moment the
/// coordinator began a move until the shard's entities handled a message on the new node;
/// fields p50_ms, p99_ms, lost (messages sent and never handled: must be 0). The store is the
/// etcd in TROUPE_ETCD_ENDPOINTS, else the in-process model.
run_result run(std::size_t workers, std::int64_t moves, std::int64_t entities);

}  // namespace troupe::bench::handoff
