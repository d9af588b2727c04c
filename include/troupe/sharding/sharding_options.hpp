#pragma once
/// How a sharded type is started: its name, its entity class (with constructor arguments), how
/// to read an entity id from a message, and the knobs of shards and passivation. Unset knobs
/// fall back to the node's configuration (`troupe.sharding.*`), then to the defaults listed in
/// docs/configuration.md ("troupe.sharding keys") and docs/sharding.md ("Options and defaults").

#include <troupe/core/actor.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/core/errc.hpp>
#include <troupe/core/mailbox.hpp>
#include <troupe/core/supervision.hpp>
#include <troupe/sharding/shard_id.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace troupe::sharding {

/// Reads the entity id from a message; must not be empty. May throw (the message is rejected).
template <class M>
using entity_id_extractor = std::function<std::string(const M&)>;

/// A sharded type's identity, declared once (usually as `static inline shard_key<M> shard_key`
/// on the entity class): the type name, plus the extractor for nodes that start the type. A node
/// that only looks entities up can name the type without an extractor.
template <class M>
struct shard_key {
  std::string type_name;
  entity_id_extractor<M> extract_entity_id;

  static shard_key of(std::string type_name, entity_id_extractor<M> extract = {}) {
    return {std::move(type_name), std::move(extract)};
  }
};

/// How every entity of a type is spawned: its mailbox, and how its shard supervises it. Unset
/// fields come from the node's configuration (troupe.sharding.types."<type>", then
/// troupe.sharding), then from the defaults: an unbounded mailbox, and an entity that fails is
/// stopped (its next message starts a fresh incarnation).
struct entity_options {
  std::optional<mailbox_config> mailbox;
  std::optional<supervisor_strategy> supervision;

  static entity_options create() { return {}; }
  /// A bounded mailbox per entity, e.g. mailbox_config::bounded(100, overflow_policy::fail).
  entity_options& with_mailbox(mailbox_config m) {
    mailbox = m;
    return *this;
  }
  /// What the shard does when the entity's handler throws: stop (default), restart or resume
  /// (supervisor_strategy's deciders; escalate is taken as stop: it would fail the shard).
  entity_options& with_supervision(supervisor_strategy s) {
    supervision = std::move(s);
    return *this;
  }
};

/// Spawns one entity under its shard (the type-erased "entity class + constructor arguments").
template <class M>
using entity_spawner = std::function<actor_ref<M>(actor_context& shard, spawn_options&& options)>;

/// A message for one entity with its id beside it (Akka's ShardingEnvelope): a region started
/// with sharding_options<M, sharding_envelope<M>> takes these and gives each entity the inner
/// M; the id and message extractors default to the two fields.
template <class M>
struct sharding_envelope {
  std::string entity_id;
  M message;
};

template <class T>
struct is_sharding_envelope : std::false_type {};
template <class M>
struct is_sharding_envelope<sharding_envelope<M>> : std::true_type {};

/// How a sharded type is started. Entities take M; the region's ref takes In (by default M
/// too). With In other than M, with_extract_entity_message turns each In into the M its entity
/// gets (e.g. unwraps an envelope), on the sender's thread.
template <class M, class In = M>
class sharding_options {
 public:
  using message_type = M;
  using input_type = In;

  static sharding_options create() { return {}; }

  sharding_options& with_type_name(std::string name) {
    type_name = std::move(name);
    return *this;
  }
  /// The entity class E (an actor<M> or async_actor<M>) built with `args` (kept, copied for each
  /// incarnation).
  template <class E, class... Args>
  sharding_options& with_entity(Args... args) {
    static_assert(std::is_same_v<typename E::message_type, M>,
                  "the entity must handle the sharded message type");
    spawn_entity = [args...](actor_context& shard, spawn_options&& o) {
      return troupe::detail::spawn_actor<E>(shard.cell(), std::move(o), args...);
    };
    return *this;
  }
  sharding_options& with_extract_entity_id(entity_id_extractor<In> f) {
    extract_entity_id = std::move(f);
    return *this;
  }
  /// Rewrites a message before the entity sees it (e.g. strips routing fields); with In other
  /// than M, turns what the region's ref takes into what the entity takes.
  sharding_options& with_extract_entity_message(std::function<M(In)> f) {
    extract_entity_message = std::move(f);
    return *this;
  }
  /// Replaces crc32(id) % number_of_shards.
  sharding_options& with_extract_shard_id(std::function<shard_id(const std::string&)> f) {
    extract_shard_id = std::move(f);
    return *this;
  }
  sharding_options& with_num_shards(std::uint32_t n) {
    num_shards = n;
    return *this;
  }
  /// Only nodes with this role host the type (takes effect with the cluster).
  sharding_options& with_role(std::string r) {
    role = std::move(r);
    return *this;
  }
  /// Route only, host no entities here (takes effect with the cluster).
  sharding_options& with_proxy(bool on = true) {
    proxy = on;
    return *this;
  }
  /// Re-spawn remembered entities after failover (takes effect with the cluster).
  sharding_options& with_remember_entities(bool on = true) {
    remember_entities = on;
    return *this;
  }
  /// Entities that always run: `ids(shard)` names those of each shard, which start as soon as
  /// the shard is placed on a node and again, each `interval`, if they stopped (the cluster
  /// singleton and the sharded daemon process are built on it). Combine with no passivation.
  sharding_options& with_keep_alive(std::function<std::vector<std::string>(shard_id)> ids,
                                    duration interval = std::chrono::seconds(5)) {
    keep_alive = std::move(ids);
    keep_alive_interval = interval;
    return *this;
  }
  /// Passivate entities idle this long; 0 disables (default 5 minutes).
  sharding_options& with_passivation_idle(duration d) {
    passivation_idle = d;
    return *this;
  }
  /// Stop shards empty this long; unset follows passivation_idle; 0 keeps them resident.
  sharding_options& with_shard_passivation_idle(duration d) {
    shard_passivation_idle = d;
    return *this;
  }
  /// At most this many active entities per node (least recently used beyond it passivate).
  sharding_options& with_max_entities(std::size_t n) {
    max_entities = n;
    return *this;
  }

  /// Back-pressure: at most `n` messages per shard sent through this type's refs and not yet
  /// handled by their entity (0: no bound). Beyond it, tell and try_tell are refused
  /// (errc::mailbox_full) and `co_await ref.send(m)` waits for room. Not with max-entities.
  sharding_options& with_shard_capacity(std::size_t n) {
    shard_capacity = n;
    return *this;
  }

  /// Spawn options for every entity of the type (mailbox bound and policy, supervision).
  sharding_options& with_entity_options(entity_options o) {
    entity = std::move(o);
    return *this;
  }

  /// At most this many of the region's entities inside a coroutine handler at once (0: no cap).
  /// The rest wait their turn for a permit, in order: entity-per-key removes the shard as a
  /// bottleneck but can flood the store behind it. Size it as target rate x handler latency x
  /// headroom (docs/hot-keys.md). Plain (non-coroutine) handlers are not capped.
  sharding_options& with_max_concurrent(std::size_t n) {
    max_concurrent = n;
    return *this;
  }

  std::string type_name;
  entity_spawner<M> spawn_entity;
  entity_id_extractor<In> extract_entity_id;
  std::function<M(In)> extract_entity_message;
  std::function<shard_id(const std::string&)> extract_shard_id;
  std::optional<std::uint32_t> num_shards;
  std::optional<std::string> role;
  std::optional<bool> proxy;
  std::optional<bool> remember_entities;
  std::optional<duration> passivation_idle;
  std::optional<duration> shard_passivation_idle;
  std::optional<std::size_t> max_entities;
  std::size_t max_concurrent = 0;
  std::function<std::vector<std::string>(shard_id)> keep_alive;
  duration keep_alive_interval = std::chrono::seconds(5);
  entity_options entity;
  std::optional<std::size_t> shard_capacity;
};

/// The settings a region runs with, every knob resolved.
struct region_settings {
  std::string type_name;
  std::uint32_t num_shards = default_number_of_shards;
  duration passivation_idle = std::chrono::minutes(5);
  duration shard_passivation_idle = std::chrono::minutes(5);
  std::size_t max_entities = 0;
  std::size_t buffer_size = 100'000;
  bool proxy = false;
  bool remember_entities = false;
  /// With remember entities: how many remembered entities the type's shards on one node start
  /// per second, together (`remember-entities-start-rate`).
  std::size_t remember_start_rate = 1000;
  /// With remember entities: how long after an entity stopped without being passivated (it
  /// failed, or stopped itself) its shard starts it again (`entity-restart-backoff`).
  duration entity_restart_backoff = std::chrono::seconds(10);
  std::string role;
  /// Every entity's mailbox (default unbounded) and supervision (default: stop on failure).
  mailbox_config entity_mailbox{};
  /// Messages per shard in flight (back-pressure); 0: unbounded.
  std::size_t shard_capacity = 0;
  supervisor_strategy entity_supervision = supervisor_strategy::stopping();
};

}  // namespace troupe::sharding
