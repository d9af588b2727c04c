#pragma once
/// Who a sharded entity is. The core only carries it (from spawn to the actor's context); the
/// sharding layer sets it when it spawns an entity, and tests can set it with
/// spawn_options::with_entity to exercise an entity without sharding.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace troupe {

class concurrency_gate;

struct entity_identity {
  /// The value the type's extractor returned, unchanged (never decoded from a path).
  std::string entity_id;
  /// The sharded type, e.g. "cart".
  std::string type_name;
  /// The shard the id hashes to.
  std::uint32_t shard_id = 0;

  friend bool operator==(const entity_identity&, const entity_identity&) = default;
};

namespace detail {

class node_standing;

/// Where an entity lives: its type and shard, and the gate its coroutine handlers pass (when
/// its region caps them). Shared by every entity of a shard (its shard owns it and outlives
/// them), so an entity's cell keeps one pointer to it.
struct entity_home {
  std::string type_name;
  std::uint32_t shard_id = 0;
  std::shared_ptr<concurrency_gate> gate;  // null: no cap
  /// Appends the actor name of the entity `entity_id` to `out` (the sharding layer's scheme):
  /// an entity's cell keeps only its id and builds its name with this when asked.
  void (*append_entity_name)(std::string& out, std::string_view entity_id) = nullptr;
  /// The epoch of the shard's allocation once its owner raised the shard's fence to it (the
  /// cluster layer sets it); persistent entities then write at that epoch and name the shard, so
  /// the stores refuse them once a newer owner raises the fence. Empty on a single node: writes
  /// check no shard fence.
  std::optional<std::uint64_t> fence_epoch;
  /// Whether the node still stands for the shard (the cluster's lease): once lost, the entity
  /// handles no further message, each becomes a dead letter, so nothing runs here once the shard
  /// may run elsewhere. Null: always (a node without a cluster).
  std::shared_ptr<const node_standing> standing;
};

/// A process-wide entity_home for this type and shard, for entities spawned without sharding
/// (spawn_options::with_entity); never freed (thread-safe).
const entity_home& intern_entity_home(std::string_view type_name, std::uint32_t shard_id);

/// What spawn_options carry for an entity: its id, and its home when it has no shard to find it
/// in (spawned alone, in tests).
struct entity_tag {
  std::string entity_id;
  /// Null for a sharded entity: it finds its home in its shard.
  const entity_home* home = nullptr;
};

}  // namespace detail
}  // namespace troupe
