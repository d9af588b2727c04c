#include <troupe/observability/cluster_management_source.hpp>
#include <troupe/observability/observe_node.hpp>

#include <stdexcept>
#include <utility>

namespace troupe::observability {

observed_node observe_node(std::shared_ptr<metrics_registry> registry, actor_system& system,
                           sharding::cluster_sharding& sharding,
                           std::shared_ptr<cluster::cluster_node> node,
                           cluster::remote_node& remote,
                           std::optional<management_options> management) {
  if (!registry || !node) throw std::invalid_argument("observe_node: a registry and a node");
  auto configured = read_management_config(system.config());
  observed_node o;
  o.registry = registry;
  o.runtime = std::make_unique<runtime_metrics>(system, registry);
  o.sharding = std::make_unique<sharding_metrics>(*registry, sharding, system);
  o.remote = std::make_unique<remote_metrics>(*registry, remote);
  if (management || configured.enabled) {
    auto source = make_cluster_management_source(std::move(node), sharding, registry.get());
    o.server = management_server::start(std::move(source),
                                        management ? *std::move(management) : configured.options);
  }
  return o;
}

}  // namespace troupe::observability
