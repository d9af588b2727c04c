#pragma once
// Copying a count the runtime keeps into a registry counter at collect time.

#include <troupe/core/metrics.hpp>

#include <cstdint>

namespace troupe::observability::detail {

/// Adds to `c` what `now` holds beyond `last` (all of `now` after a reset), and remembers it.
inline void advance(counter& c, std::uint64_t& last, std::uint64_t now) {
  c.add(now >= last ? now - last : now);
  last = now;
}

}  // namespace troupe::observability::detail
