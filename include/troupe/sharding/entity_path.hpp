#pragma once
/// The actor names of a region, its shards and its entities, e.g.
/// `region-cart/shard-7/entity-user~002F42`.
///
/// An entity's name is a label, not a second spelling of its id: nothing decodes it, and the
/// escape is not part of the API. Read the id from the entity itself. What the escape does
/// guarantee is that it is injective (two different ids never get one name, which would make the
/// second spawn fail and take the shard down with it) and that every result is a valid actor name.

#include <troupe/sharding/shard_id.hpp>

#include <string>
#include <string_view>

namespace troupe::sharding {

/// The child name of the entity `entity_id` in its shard: "entity-" followed by the id with every
/// byte outside [A-Za-z0-9_-.@:+] ('~' included) written as '~' plus four uppercase hex digits
/// of the byte's value ("user/42" -> "entity-user~002F42").
[[nodiscard]] std::string entity_child_name(std::string_view entity_id);

/// Appends entity_child_name(entity_id) to `out` (an entity's cell keeps only its id and builds
/// its name, and the path segment, with this when asked).
void append_entity_child_name(std::string& out, std::string_view entity_id);

/// The child name of shard `shard` in its region: "shard-<n>" in decimal.
[[nodiscard]] std::string shard_child_name(shard_id shard);

/// The name of the region of a sharded type: "region-" followed by `type_name`, escaped as in
/// entity_child_name.
[[nodiscard]] std::string region_name(std::string_view type_name);

}  // namespace troupe::sharding
