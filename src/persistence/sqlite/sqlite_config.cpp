#include "troupe/persistence/sqlite_config.hpp"

#include "troupe/persistence/errc.hpp"
#include "troupe/persistence/persistence_extension.hpp"

#include <chrono>
#include <string>

namespace troupe::persistence {

sqlite_options sqlite_options_from_config(const troupe::config& config) {
  constexpr const char* prefix = "troupe.persistence.sqlite.";
  auto key = [&](const char* k) { return std::string(prefix) + k; };
  sqlite_options out;
  auto file = config.get_string(key("file"));
  if (!file || file->empty()) {
    throw persistence_error(errc::invalid_request, key("file") + " is required for SQLite");
  }
  out.file = *file;
  if (auto d = config.get_string(key("durability"))) {
    if (*d == "full") {
      out.durability = sqlite_durability::full;
    } else if (*d == "normal") {
      out.durability = sqlite_durability::normal;
    } else {
      throw persistence_error(errc::invalid_request,
                              key("durability") + ": expected full or normal, got '" + *d + "'");
    }
  }
  if (auto n = config.get_int(key("max-batch"))) {
    if (*n < 1) throw persistence_error(errc::invalid_request, key("max-batch") + " must be >= 1");
    out.max_batch = static_cast<std::size_t>(*n);
  }
  if (auto n = config.get_int(key("max-queued"))) {
    if (*n < 1) throw persistence_error(errc::invalid_request, key("max-queued") + " must be >= 1");
    out.max_queued = static_cast<std::size_t>(*n);
  }
  if (auto t = config.get_duration(key("busy-timeout"))) {
    out.busy_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*t);
  }
  return out;
}

void register_sqlite_plugin(actor_system& system) {
  get(system).register_plugin_factory("sqlite", [](const troupe::config& config) {
    return std::shared_ptr<plugin>(open_sqlite_plugin(sqlite_options_from_config(config)));
  });
}

}  // namespace troupe::persistence
