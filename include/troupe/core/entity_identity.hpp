#pragma once
/// Who a sharded entity is. The core only carries it (from spawn to the actor's context); the
/// sharding layer sets it when it spawns an entity, and tests can set it with
/// spawn_options::with_entity to exercise an entity without sharding.

#include <cstdint>
#include <string>
#include <string_view>

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

namespace detail {

/// The identity as an entity's cell keeps it: a million entities of one type share one copy of
/// the type name (interned, never freed), so each pays only for its id.
struct entity_tag {
  std::string entity_id;
  const std::string* type_name = nullptr;  // from intern_type_name
  std::uint32_t shard_id = 0;

  [[nodiscard]] entity_identity identity() const { return {entity_id, *type_name, shard_id}; }
};

/// The one copy of `name` that lives as long as the process (thread-safe; type names are few).
const std::string& intern_type_name(std::string_view name);

}  // namespace detail
}  // namespace troupe
