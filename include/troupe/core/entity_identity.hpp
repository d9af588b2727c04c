#pragma once
/// Who a sharded entity is. The core only carries it (from spawn to the actor's context); the
/// sharding layer sets it when it spawns an entity, and tests can set it with
/// spawn_options::with_entity to exercise an entity without sharding.

#include <cstdint>
#include <string>

namespace troupe {

struct entity_identity {
  /// The value the type's extractor returned, unchanged (never decoded from a path).
  std::string entity_id;
  /// The sharded type, e.g. "cart".
  std::string type_name;
  /// The shard the id hashes to.
  std::uint32_t shard_id = 0;

  friend bool operator==(const entity_identity&, const entity_identity&) = default;
};

}  // namespace troupe
