#pragma once
/// The manual clock for tests (defined with the core clock; re-exported here for discoverability).

#include <troupe/core/clock.hpp>

namespace troupe::testkit {
using troupe::manual_clock;
}  // namespace troupe::testkit
