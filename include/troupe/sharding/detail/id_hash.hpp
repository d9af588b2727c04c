#pragma once
/// INTERNAL. A fast hash for entity ids, which are short strings hashed several times per
/// message (region, policy, shard). Reads eight bytes at a time and mixes with a 64x64->128-bit
/// multiply; inline, so a 10-byte id costs a few instructions instead of a library call.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace troupe::sharding::detail {

inline std::uint64_t mix_words(std::uint64_t a, std::uint64_t b) noexcept {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<std::uint64_t>(r) ^ static_cast<std::uint64_t>(r >> 64U);
}

inline std::size_t hash_id(std::string_view id) noexcept {
  const char* p = id.data();
  std::size_t n = id.size();
  std::uint64_t h = 0x9E3779B97F4A7C15ULL ^ n;
  while (n >= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    h = mix_words(h ^ word, 0xBF58476D1CE4E5B9ULL);
    p += 8;
    n -= 8;
  }
  std::uint64_t tail = 0;
  for (std::size_t i = 0; i < n; ++i) {
    tail |= static_cast<std::uint64_t>(static_cast<unsigned char>(p[i])) << (8U * i);
  }
  return mix_words(h ^ tail, 0x94D049BB133111EBULL);
}

/// hash_id as a transparent hasher for containers keyed by ids (std::string or views).
struct id_hasher {
  using is_transparent = void;
  std::size_t operator()(std::string_view id) const noexcept { return hash_id(id); }
};

}  // namespace troupe::sharding::detail
