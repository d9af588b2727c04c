#pragma once
/// The persistence extension of an actor system: which store entities use, the codec registry
/// their events and states go through, their ownership epoch and their snapshot interval.
///
///     auto& p = troupe::persistence::get(system);
///     p.codecs().add<deposited>("bank.deposited").add<account_state>("bank.account");
///     p.set_default_plugin(troupe::persistence::open_sqlite_plugin({.file = "bank.db"}));
///
/// Configure it at start-up, before the first entity starts; entities read it when they start.

#include <troupe/core/actor_system.hpp>
#include <troupe/core/entity_identity.hpp>
#include <troupe/persistence/plugin.hpp>
#include <troupe/persistence/records.hpp>
#include <troupe/persistence/serialization/codec_registry.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace troupe::persistence {

/// Opens a plugin from the node's configuration (see register_plugin_factory).
using plugin_factory = std::function<std::shared_ptr<plugin>(const troupe::config&)>;

/// Says which epoch an entity writes with (the cluster supplies one per shard allocation).
using epoch_provider = std::function<ownership_epoch(const std::optional<entity_identity>&)>;

/// One per actor system (persistence::get(system)); thread-safe.
class persistence_extension {
 public:
  /// Created by the actor system on first use. Reads `troupe.persistence.snapshot-every`.
  explicit persistence_extension(actor_system& system);
  persistence_extension(const persistence_extension&) = delete;
  persistence_extension& operator=(const persistence_extension&) = delete;
  ~persistence_extension();

  static persistence_extension& get(actor_system& system) {
    return system.extension<persistence_extension>();
  }

  /// The plugin of every entity type without its own. Unless set in code, it is opened on first
  /// use as `troupe.persistence.plugin` says: "memory" (the default) or the name of a
  /// registered factory (e.g. "sqlite", see sqlite_config.hpp). Throws persistence_error
  /// (errc::invalid_request) for a name no factory answers to.
  [[nodiscard]] std::shared_ptr<plugin> default_plugin();
  void set_default_plugin(std::shared_ptr<plugin> store);
  /// The plugin of one sharded type (its type name), overriding the default.
  void set_plugin_for(std::string type_name, std::shared_ptr<plugin> store);
  /// The type's own plugin, else the default.
  [[nodiscard]] std::shared_ptr<plugin> plugin_for(std::string_view type_name);
  /// Makes `troupe.persistence.plugin = <name>` open a plugin with `factory`.
  void register_plugin_factory(std::string name, plugin_factory factory);

  /// The registry entities decode and encode events, snapshots and states with. Fill it at
  /// start-up; afterwards it is only read.
  [[nodiscard]] codec_registry& codecs() noexcept { return codecs_; }

  /// Replaces the epoch every entity writes with (default: always 0).
  void set_epoch_provider(epoch_provider provider);
  [[nodiscard]] ownership_epoch epoch_for(const std::optional<entity_identity>& who) const;

  /// Events between two snapshots of an event-sourced entity (0: no snapshots); from
  /// `troupe.persistence.snapshot-every`, default 0.
  [[nodiscard]] std::uint64_t snapshot_every() const noexcept {
    return snapshot_every_.load(std::memory_order_relaxed);
  }
  void set_snapshot_every(std::uint64_t n) noexcept {
    snapshot_every_.store(n, std::memory_order_relaxed);
  }

 private:
  troupe::config config_;
  mutable std::mutex mutex_;
  std::shared_ptr<plugin> default_;
  std::map<std::string, plugin_factory, std::less<>> factories_;
  std::map<std::string, std::shared_ptr<plugin>, std::less<>> by_type_;
  epoch_provider epochs_;
  codec_registry codecs_;
  std::atomic<std::uint64_t> snapshot_every_{0};
};

/// The system's persistence extension.
inline persistence_extension& get(actor_system& system) {
  return persistence_extension::get(system);
}

}  // namespace troupe::persistence
