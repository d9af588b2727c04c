#pragma once
/// INTERNAL, for tests only. Switches that plant, on purpose, the bugs the whole-cluster
/// simulation's checkers guard against, so that a test can show each checker fires
/// (tests/cluster/simulated_cluster_test.cpp). All are off unless a test turns one on; the
/// region reads them only on its rare paths (a shard that moved, a message another node passed
/// on), with one relaxed load.

#include <atomic>

namespace troupe::sharding::detail::planted {

/// A region whose shard moved sends the shard's next messages straight to the new home,
/// without the flush marker that makes them wait behind those still on their way to the old one.
extern std::atomic<bool> skip_flush_before_handoff;

/// A message another node passed on, which has to wait for its shard, goes ahead of what
/// waits already instead of behind it.
extern std::atomic<bool> bounced_out_of_order;

}  // namespace troupe::sharding::detail::planted
