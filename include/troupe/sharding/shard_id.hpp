#pragma once
/// Which shard an entity belongs to: a stable hash of its id, the same in every process, on every
/// platform and across restarts, so every node routes an id to the same shard.

#include <cstdint>
#include <string_view>

namespace troupe::sharding {

/// A shard's number, in [0, number_of_shards).
using shard_id = std::uint32_t;

/// The number of shards of a sharded type when its settings name none (`number-of-shards`).
inline constexpr std::uint32_t default_number_of_shards = 64;

/// The shard of `entity_id`: zlib's crc32 of its bytes (UTF-8) modulo `number_of_shards`.
/// `shard_of("user:42", 16) == 6`. Throws troupe::error(errc::invalid_config) when
/// `number_of_shards` is 0.
[[nodiscard]] shard_id shard_of(std::string_view entity_id, std::uint32_t number_of_shards);

}  // namespace troupe::sharding
