#include "troupe/sharding/shard_id.hpp"

#include <troupe/core/errc.hpp>

#include <zlib.h>

#include <array>
#include <cstdint>

namespace troupe::sharding {

namespace {

// CRC-32 (the reflected polynomial 0xEDB88320, as zlib), one table lookup per byte.
constexpr std::array<std::uint32_t, 256> make_crc_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1U) != 0 ? 0xEDB88320U ^ (c >> 1U) : c >> 1U;
    table[i] = c;
  }
  return table;
}

constexpr std::array<std::uint32_t, 256> crc_table = make_crc_table();

// Ids are mostly short: a byte loop here costs a fraction of zlib's call, which wins on long
// input (it consumes words at a time).
constexpr std::size_t short_id = 64;

}  // namespace

shard_id shard_of(std::string_view entity_id, std::uint32_t number_of_shards) {
  if (number_of_shards == 0) {
    throw error(errc::invalid_config, "number of shards must be at least 1, not 0");
  }
  std::uint32_t crc = 0;
  if (entity_id.size() <= short_id) {
    crc = 0xFFFFFFFFU;
    for (const char ch : entity_id) {
      crc = crc_table[(crc ^ static_cast<unsigned char>(ch)) & 0xFFU] ^ (crc >> 8U);
    }
    crc ^= 0xFFFFFFFFU;
  } else {
    // crc32_z takes a size_t length, so ids longer than 4 GiB need no chunking.
    const auto* bytes = reinterpret_cast<const Bytef*>(entity_id.data());
    crc = static_cast<std::uint32_t>(crc32_z(0L, bytes, entity_id.size()));
  }
  return static_cast<shard_id>(crc % number_of_shards);
}

}  // namespace troupe::sharding
