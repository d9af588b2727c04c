#pragma once
/// Seeds for randomized tests: reproducible on demand, printed every time.

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>

namespace troupe::testkit {

/// TROUPE_TEST_SEED when set, else a fresh random seed; printed with how to rerun it.
inline std::uint64_t test_seed() {
  const char* fixed = std::getenv("TROUPE_TEST_SEED");
  const std::uint64_t seed =
      fixed != nullptr ? std::strtoull(fixed, nullptr, 10) : std::random_device{}();
  std::cout << "seed " << seed << " (rerun with TROUPE_TEST_SEED=" << seed << ")\n";
  return seed;
}

}  // namespace troupe::testkit
