#pragma once
/// The cluster singleton and the sharded daemon process, built on sharding's kept-alive entities
/// (sharding_options::with_keep_alive): so they move with their shards on a leave or a failover
/// and are fenced by the same leases and epochs as every entity (they never run twice).
///
///     // One scheduler in the whole cluster (on the nodes with role "backend"):
///     auto scheduler = start_singleton<scheduler_actor>(
///         sharding, singleton_settings::named("scheduler").with_role("backend"));
///     scheduler.tell(schedule{...});  // the proxy: from any node, wherever it runs
///
///     // Eight indexers spread over the nodes, each restarted elsewhere when its node goes:
///     start_daemon_process<indexer>(sharding, daemon_process_settings::named("indexer", 8));
///     // (each worker reads its number, 0 to 7, from entity_id())
///
/// Across nodes the entity's message type must be in the message registry, as for any sharded
/// type. Every node starts it (a node that must never run the singleton starts only its proxy,
/// start_singleton_proxy; nodes without the role act as proxies anyway).

#include <troupe/core/errc.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/sharding/sharding_options.hpp>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace troupe::sharding {

struct singleton_settings {
  static singleton_settings named(std::string name) {
    singleton_settings s;
    s.name = std::move(name);
    return s;
  }
  singleton_settings& with_role(std::string r) {
    role = std::move(r);
    return *this;
  }
  singleton_settings& with_keep_alive_interval(duration d) {
    keep_alive_interval = d;
    return *this;
  }

  /// Names the singleton; its sharded type is "singleton-<name>" and its entity id `name`.
  std::string name;
  /// Only nodes with this role run it (empty: any node).
  std::string role;
  /// How often its node checks that it still runs, and starts it again if it stopped.
  duration keep_alive_interval = std::chrono::seconds(5);
};

namespace detail {
/// The sharded type behind a singleton.
template <class M>
sharding_options<M> singleton_type(const singleton_settings& settings) {
  if (settings.name.empty()) throw error(errc::invalid_config, "singleton: a name is required");
  auto type = sharding_options<M>::create()
                  .with_type_name("singleton-" + settings.name)
                  .with_extract_entity_id([name = settings.name](const M&) { return name; })
                  .with_num_shards(1)
                  .with_passivation_idle(duration::zero())
                  .with_shard_passivation_idle(duration::zero())
                  .with_keep_alive(
                      [name = settings.name](shard_id) { return std::vector<std::string>{name}; },
                      settings.keep_alive_interval);
  if (!settings.role.empty()) type.with_role(settings.role);
  return type;
}
}  // namespace detail

/// Starts the singleton of entity class E (with E's constructor arguments `args`) and returns
/// its proxy: every message sent to it reaches the one instance, wherever it runs. It starts as
/// soon as some node can host it, without a message, and is never passivated.
template <class E, class... Args>
actor_ref<typename E::message_type> start_singleton(cluster_sharding& sharding,
                                                    const singleton_settings& settings,
                                                    Args... args) {
  auto type = detail::singleton_type<typename E::message_type>(settings);
  type.template with_entity<E>(std::move(args)...);
  return sharding.start(std::move(type));
}

/// Only the proxy, on a node that never runs the singleton (its messages are of type M).
template <class M>
actor_ref<M> start_singleton_proxy(cluster_sharding& sharding, const singleton_settings& settings) {
  auto type = detail::singleton_type<M>(settings);
  type.with_proxy();
  return sharding.start(std::move(type));
}

struct daemon_process_settings {
  static daemon_process_settings named(std::string name, std::uint32_t workers) {
    daemon_process_settings s;
    s.name = std::move(name);
    s.workers = workers;
    return s;
  }
  daemon_process_settings& with_role(std::string r) {
    role = std::move(r);
    return *this;
  }
  daemon_process_settings& with_keep_alive_interval(duration d) {
    keep_alive_interval = d;
    return *this;
  }

  /// Names the process; its sharded type is "daemon-<name>".
  std::string name;
  /// How many workers run, with entity ids "0" to "<workers - 1>", one per shard.
  std::uint32_t workers = 1;
  /// Only nodes with this role run workers (empty: any node).
  std::string role;
  /// How often each node checks that its workers still run, and starts again those that stopped.
  duration keep_alive_interval = std::chrono::seconds(5);
};

namespace detail {
/// A daemon worker's shard: its number.
inline shard_id worker_shard(const std::string& id, std::uint32_t workers) {
  std::uint32_t n = 0;
  const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
  if (ec != std::errc{} || end != id.data() + id.size() || n >= workers) {
    throw error(errc::invalid_entity_id, "'" + id + "' is not a daemon worker's number");
  }
  return n;
}
}  // namespace detail

/// Starts the sharded daemon process: `workers` instances of E (with E's constructor arguments
/// `args`), spread over the nodes by the type's allocation strategy, each running without a
/// message and started again on another node when its node leaves or fails. The workers take
/// no routed messages: each finds its work by its number (entity_id()).
template <class E, class... Args>
void start_daemon_process(cluster_sharding& sharding, daemon_process_settings settings,
                          Args... args) {
  using M = typename E::message_type;
  if (settings.name.empty())
    throw error(errc::invalid_config, "daemon process: a name is required");
  if (settings.workers == 0) {
    throw error(errc::invalid_config, "daemon process '" + settings.name + "': no workers");
  }
  auto type =
      sharding_options<M>::create()
          .with_type_name("daemon-" + settings.name)
          .with_extract_entity_id([name = settings.name](const M&) -> std::string {
            throw error(errc::invalid_entity_id,
                        "daemon process '" + name + "': its workers take no routed messages");
          })
          .with_extract_shard_id([workers = settings.workers](const std::string& id) {
            return detail::worker_shard(id, workers);
          })
          .with_num_shards(settings.workers)
          .with_passivation_idle(duration::zero())
          .with_shard_passivation_idle(duration::zero())
          .with_keep_alive(
              [](shard_id shard) { return std::vector<std::string>{std::to_string(shard)}; },
              settings.keep_alive_interval);
  if (!settings.role.empty()) type.with_role(settings.role);
  type.template with_entity<E>(std::move(args)...);
  (void)sharding.start(std::move(type));
}

}  // namespace troupe::sharding
