#pragma once
// The runtime's own log lines (spdlog's "troupe" logger) in the demo's output: warnings and
// errors only, through the console so they never break the live status line, and each line
// once when several nodes log it at the same moment (every node sees a member go). Informational
// lines (connections, dead letters) stay out: the phase lines already tell that story.

#include "console.hpp"

#include <string>

namespace cluster_demo {

/// Registers the "troupe" logger; call before the first actor system starts.
void route_runtime_log(console& out, demo_clock::time_point t0);
/// Drops the runtime's lines from now on (while the nodes shut down), so nothing reaches the
/// console after it is gone.
void silence_runtime_log();

/// In the driver: prints a node process's runtime line ("warning <text>" or "error <text>") as
/// its own, once when several nodes log it at the same moment.
void relay_runtime_line(const std::string& line);
/// In a node process: the runtime's warnings and errors go to stdout as "log warning <text>"
/// lines, which the driver relays. Call before the node's actor system starts.
void route_runtime_log_to_parent();

}  // namespace cluster_demo
