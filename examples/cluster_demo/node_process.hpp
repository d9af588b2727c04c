#pragma once
// A node process of the multi-process demo (troupe_cluster_demo --node NAME ...): it joins the
// cluster on the real etcd, TCP on 127.0.0.1 on a free port, starts the cart type on the shared
// SQLite journal, logs every cart's start and stop to its activation log, prints
// "ready <address>" for the driver, and runs until SIGTERM or SIGINT, on which it leaves
// gracefully (cluster_node's signal step) and ends. It dies with the driver (SIGKILL).

#include "options.hpp"

namespace cluster_demo {

/// Runs the node; the process's exit code.
int serve_node(const options& o);

}  // namespace cluster_demo
