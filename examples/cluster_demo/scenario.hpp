#pragma once
// The demo's story, whichever way its nodes run (demo_cluster.hpp): nodes a, b and c serve the
// carts under load; d joins, b leaves gracefully, c is killed; every shard move is printed as it
// happens; then every cart is read back and the summary table printed.

#include "demo_cluster.hpp"
#include "load.hpp"
#include "options.hpp"

#include <cstdint>

namespace cluster_demo {

/// The cart type's shards.
inline constexpr std::uint32_t num_shards = 64;

/// Runs the phases on `cluster` with the load `settings` (their cart count from `f`); returns
/// the exit code: 0 when every check passed, 1 otherwise.
int run_scenario(const options& f, demo_cluster& cluster, load_settings settings);

}  // namespace cluster_demo
