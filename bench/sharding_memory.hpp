// troupe_bench_sharding's memory cases beside bytes_per_idle_entity (whose ids are at most 7
// characters): idle entities with realistic ids. See sharding_memory.cpp.

#pragma once

#include "bench_support.hpp"

#include <cstdint>
#include <vector>

namespace troupe::bench::sharding_memory {

/// The cases, sizes divided by `shrink` (--shrink).
std::vector<bench_case> cases(std::int64_t shrink);

}  // namespace troupe::bench::sharding_memory
