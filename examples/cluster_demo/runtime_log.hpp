#pragma once
// The runtime's own log lines (spdlog's "troupe" logger) in the demo's output: warnings and
// errors only, through the console so they never break the live status line, and each line
// once when several nodes log it at the same moment (every node sees a member go). Informational
// lines (connections, dead letters) stay out: the phase lines already tell that story.

#include "console.hpp"

namespace cluster_demo {

/// Registers the "troupe" logger; call before the first actor system starts.
void route_runtime_log(console& out, demo_clock::time_point t0);
/// Drops the runtime's lines from now on (while the nodes shut down), so nothing reaches the
/// console after it is gone.
void silence_runtime_log();

}  // namespace cluster_demo
