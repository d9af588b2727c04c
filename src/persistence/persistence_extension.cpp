#include "troupe/persistence/persistence_extension.hpp"

#include "troupe/persistence/errc.hpp"
#include "troupe/persistence/memory_plugin.hpp"

#include <string>
#include <utility>

namespace troupe::persistence {

persistence_extension::persistence_extension(actor_system& system) : config_(system.config()) {
  if (auto n = config_.get_int("troupe.persistence.snapshot-every")) {
    if (*n < 0) {
      throw persistence_error(errc::invalid_request,
                              "troupe.persistence.snapshot-every must not be negative");
    }
    snapshot_every_ = static_cast<std::uint64_t>(*n);
  }
}

persistence_extension::~persistence_extension() = default;

std::shared_ptr<plugin> persistence_extension::default_plugin() {
  std::lock_guard lock(mutex_);
  if (default_) return default_;
  const std::string name = config_.get_string("troupe.persistence.plugin").value_or("memory");
  if (name == "memory") {
    default_ = make_memory_plugin();
  } else if (auto it = factories_.find(name); it != factories_.end()) {
    default_ = it->second(config_);
    if (!default_) {
      throw persistence_error(errc::invalid_request,
                              "the factory of plugin '" + name + "' returned no plugin");
    }
  } else {
    throw persistence_error(errc::invalid_request,
                            "troupe.persistence.plugin = '" + name +
                                "': no such plugin is registered (for SQLite, call "
                                "troupe::persistence::register_sqlite_plugin(system) first)");
  }
  return default_;
}

void persistence_extension::register_plugin_factory(std::string name, plugin_factory factory) {
  if (!factory) throw persistence_error(errc::invalid_request, "register_plugin_factory: empty");
  std::lock_guard lock(mutex_);
  factories_[std::move(name)] = std::move(factory);
}

void persistence_extension::set_default_plugin(std::shared_ptr<plugin> store) {
  if (!store) throw persistence_error(errc::invalid_request, "set_default_plugin: null plugin");
  std::lock_guard lock(mutex_);
  default_ = std::move(store);
}

void persistence_extension::set_plugin_for(std::string type_name, std::shared_ptr<plugin> store) {
  if (!store) throw persistence_error(errc::invalid_request, "set_plugin_for: null plugin");
  std::lock_guard lock(mutex_);
  by_type_[std::move(type_name)] = std::move(store);
}

std::shared_ptr<plugin> persistence_extension::plugin_for(std::string_view type_name) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = by_type_.find(type_name); it != by_type_.end()) return it->second;
  }
  return default_plugin();
}

void persistence_extension::set_epoch_provider(epoch_provider provider) {
  std::lock_guard lock(mutex_);
  epochs_ = std::move(provider);
}

ownership_epoch persistence_extension::epoch_for(const std::optional<entity_identity>& who) const {
  epoch_provider provider;
  {
    std::lock_guard lock(mutex_);
    provider = epochs_;
  }
  return provider ? provider(who) : 0;
}

}  // namespace troupe::persistence
