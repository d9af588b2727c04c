#pragma once
/// Everything that lets operators see one cluster node, in one call: the metrics of its
/// sharding and remoting, and the management HTTP API when `troupe.management.enabled` is on
/// (management_config.hpp). The registry is made first, so the node records its own cluster
/// metrics into it from the join on:
///
///     auto registry = std::make_shared<troupe::metrics_registry>();
///     auto node = troupe::cluster::cluster_node::join(system, sharding, remote, store,
///                                                     options.with_metrics(registry));
///     auto observed = troupe::observability::observe_node(registry, system, sharding, node,
///                                                         remote);
///     // observed.server: null unless the config enables it; its port() when it listens.

#include <troupe/cluster/cluster_node.hpp>
#include <troupe/cluster/remote_node.hpp>
#include <troupe/core/actor_system.hpp>
#include <troupe/core/metrics.hpp>
#include <troupe/observability/management_config.hpp>
#include <troupe/observability/management_server.hpp>
#include <troupe/observability/remote_metrics.hpp>
#include <troupe/observability/sharding_metrics.hpp>
#include <troupe/sharding/cluster_sharding.hpp>

#include <memory>
#include <optional>

namespace troupe::observability {

/// Has the system record its hot-path figures (ask durations, shard queue waits) into a registry
/// while it lives: actor_system::record_metrics, undone when destroyed.
class runtime_metrics {
 public:
  runtime_metrics(actor_system& system, std::shared_ptr<metrics_registry> registry)
      : system_(system) {
    system_.record_metrics(std::move(registry));
  }
  ~runtime_metrics() { system_.record_metrics(nullptr); }
  runtime_metrics(const runtime_metrics&) = delete;
  runtime_metrics& operator=(const runtime_metrics&) = delete;

 private:
  actor_system& system_;
};

/// What observe_node started; destroying it stops the server and unhooks the metrics (before
/// the node, the remoting and the system go).
struct observed_node {
  std::shared_ptr<metrics_registry> registry;
  std::unique_ptr<runtime_metrics> runtime;
  std::unique_ptr<sharding_metrics> sharding;
  std::unique_ptr<remote_metrics> remote;
  /// Null when the management API is not enabled.
  std::unique_ptr<management_server> server;
};

/// Hooks the runtime's, the sharding's and the remoting's metrics into `registry` and, when the
/// system's config enables it (or `management` is given, which wins over the config), starts the
/// management API over the node. Throws config_error for a bad `troupe.management` section, and
/// what management_server::start throws when the address cannot be bound.
[[nodiscard]] observed_node observe_node(std::shared_ptr<metrics_registry> registry,
                                         actor_system& system, sharding::cluster_sharding& sharding,
                                         std::shared_ptr<cluster::cluster_node> node,
                                         cluster::remote_node& remote,
                                         std::optional<management_options> management = {});

}  // namespace troupe::observability
