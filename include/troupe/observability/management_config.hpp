#pragma once
/// The management API's settings from the node's configuration file, section
/// `troupe.management` (every key optional; the defaults are management_options'):
///
///     troupe.management {
///       enabled = off                               # the application starts the server only if on
///       address = "127.0.0.1"                       # open it beyond loopback on purpose only
///       port = 8558                                 # 0: any free port
///       bearer-token = ${?TROUPE_MANAGEMENT_TOKEN}  # POSTs need it; unset refuses every POST
///       max-id-length = 256
///       max-header-bytes = 8192
///       max-connections = 64
///       read-timeout = 10s
///       source-threads = 2
///     }
///
/// Code may still change the options it returns (`.with_port(...)`) before starting the server.

#include <troupe/core/config.hpp>
#include <troupe/observability/management_server.hpp>

namespace troupe::observability {

struct management_config {
  /// `troupe.management.enabled`: whether the node should serve the API (off by default).
  bool enabled = false;
  management_options options;
};

/// Reads `troupe.management` from `file`. Throws config_error, naming the key and where it was
/// set, for an unknown key or a value out of range (a port above 65535, a zero count or timeout).
[[nodiscard]] management_config read_management_config(const config& file);

}  // namespace troupe::observability
