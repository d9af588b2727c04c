#include "troupe/sharding/shard_id.hpp"

#include <troupe/core/errc.hpp>

#include <zlib.h>

namespace troupe::sharding {

shard_id shard_of(std::string_view entity_id, std::uint32_t number_of_shards) {
  if (number_of_shards == 0) {
    throw error(errc::invalid_config, "number of shards must be at least 1, not 0");
  }
  // crc32_z takes a size_t length, so ids longer than 4 GiB need no chunking.
  const auto* bytes = reinterpret_cast<const Bytef*>(entity_id.data());
  const uLong crc = crc32_z(crc32_z(0L, Z_NULL, 0), bytes, entity_id.size());
  return static_cast<shard_id>(crc % number_of_shards);
}

}  // namespace troupe::sharding
