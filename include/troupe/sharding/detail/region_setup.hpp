#pragma once
/// INTERNAL. What a region runs with, shared by the region actor, its shards and every ref that
/// sends to it; and what the region actor's mailbox takes.

#include <troupe/core/concurrency_gate.hpp>
#include <troupe/sharding/detail/entity_directory.hpp>
#include <troupe/sharding/messages.hpp>
#include <troupe/sharding/shard_id.hpp>
#include <troupe/sharding/sharding_options.hpp>

#include <functional>
#include <memory>
#include <string>
#include <variant>

namespace troupe::sharding::detail {

/// A question for one shard, sent through the region (shard_ref_for): the ref stays valid while
/// the shard actor passivates and comes back.
struct shard_query {
  shard_id shard = 0;
  std::variant<get_entity_ids, get_shard_stats> query;
};

template <class M>
using region_message =
    std::variant<M, routed<M>, start_entity, passivate_entities, passivation_tick, hot_keys_tick,
                 get_region_state, shard_idle, shard_query>;

template <class M>
struct region_setup {
  region_settings settings;
  entity_spawner<M> spawn_entity;
  entity_id_extractor<M> extract_entity_id;
  std::function<M(M)> extract_entity_message;
  std::function<shard_id(const std::string&)> extract_shard_id;
  /// Caps how many entities are inside a coroutine handler at once (null: no cap).
  std::shared_ptr<concurrency_gate> gate;
  /// Where the entities are; senders deliver through it.
  std::shared_ptr<entity_directory> directory;
};

}  // namespace troupe::sharding::detail
