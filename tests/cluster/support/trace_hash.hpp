#pragma once
// A simulation's trace hash: FNV-1a over what it records, so that one seed run twice can be
// compared by a single number.

#include <cstdint>
#include <string_view>

namespace troupe::cluster::test {

class trace_hash {
 public:
  void add(std::uint64_t v) noexcept {
    for (int b = 0; b < 8; ++b) mix(static_cast<unsigned char>(v >> (8 * b)));
  }
  void add(std::string_view s) noexcept {
    for (const char c : s) mix(static_cast<unsigned char>(c));
  }
  [[nodiscard]] std::uint64_t value() const noexcept { return h_; }

 private:
  void mix(unsigned char byte) noexcept {
    h_ ^= byte;
    h_ *= 0x100000001b3ULL;
  }
  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

}  // namespace troupe::cluster::test
