#pragma once
/// The allocation strategy a node's config asks for, for the types whose code names none
/// (cluster_node_options::strategy unset). Node-wide keys under `troupe.sharding`, like Akka's
/// `least-shard-allocation-strategy.rebalance-*-limit`:
///
///     troupe.sharding {
///       allocation-strategy = least-shards     # hash-mod-regions (default) | least-shards |
///       load-aware rebalance-relative-limit = 0.3         # share of the shards one round may
///       move, (0, 1] rebalance-absolute-limit = 20          # shards one round may move at most,
///       >= 1
///     }

#include <troupe/core/config.hpp>
#include <troupe/sharding/coordination/allocation_strategy.hpp>

#include <memory>

namespace troupe::sharding::coordination {

/// Builds the strategy `file` names; config_error naming the key (and its line) for a value
/// outside its range or an unknown strategy.
[[nodiscard]] std::unique_ptr<allocation_strategy> strategy_from_config(const config& file);

}  // namespace troupe::sharding::coordination
