#pragma once
/// Choosing the SQLite plugin from the node's configuration (target troupe::persistence_sqlite):
///
///     troupe.persistence {
///       plugin = sqlite
///       sqlite { file = "data/troupe.db", durability = full, max-batch = 4096 }
///     }
///
///     troupe::persistence::register_sqlite_plugin(system);  // then entities open it on first use

#include <troupe/core/actor_system.hpp>
#include <troupe/core/config.hpp>
#include <troupe/persistence/sqlite_plugin.hpp>

namespace troupe::persistence {

/// Reads `troupe.persistence.sqlite`: `file` (required), `durability` (full | normal, default
/// full), `max-batch` (default 4096), `max-queued` (default 65536), `busy-timeout` (default 5 s).
/// Throws persistence_error (errc::invalid_request) for a missing file or a bad value.
[[nodiscard]] sqlite_options sqlite_options_from_config(const troupe::config& config);

/// Registers the "sqlite" plugin factory with the system's persistence extension, so that
/// `troupe.persistence.plugin = sqlite` opens the file `troupe.persistence.sqlite` names.
void register_sqlite_plugin(actor_system& system);

}  // namespace troupe::persistence
