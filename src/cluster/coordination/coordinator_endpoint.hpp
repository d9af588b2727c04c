#pragma once
/// How a region's question reaches its type's coordinator on whichever node leads: every node
/// runs one endpoint actor, `/system/cluster-coordinators`, exposed to the other nodes, that hands
/// each home_request_message to the local runner of its type. A placement's home request goes to
/// the local runner and to the endpoint of every other member; the runners that do not lead
/// ignore it, so nobody needs to know who leads, and a new leader is asked at the next retry.

#include <troupe/cluster/cluster_messages.hpp>
#include <troupe/cluster/remote_node.hpp>
#include <troupe/core/actor.hpp>

#include "cluster/coordination/coordinator_runner.hpp"
#include "cluster/named_directory.hpp"
#include "cluster/placement/cluster_placement.hpp"

#include <memory>
#include <string>
#include <vector>

namespace troupe::cluster {

/// The path of every node's coordinator endpoint.
inline constexpr const char* coordinator_endpoint_path = "/system/cluster-coordinators";

/// The runners of this node, by type; shared by the endpoint and the cluster's wiring.
using coordinator_directory = named_directory<coordinator_runner>;

/// Hands home requests from other nodes to this node's runners.
class coordinator_endpoint final : public troupe::actor<home_request_message> {
 public:
  explicit coordinator_endpoint(std::shared_ptr<const coordinator_directory> runners)
      : runners_(std::move(runners)) {}

 private:
  void receive(home_request_message& m) override;

  std::shared_ptr<const coordinator_directory> runners_;
};

/// The path of every node's rebalance endpoint.
inline constexpr const char* rebalance_endpoint_path = "/system/cluster-rebalance";

/// Hands an operator's rebalance request from another node to this node's runner of its type.
class rebalance_endpoint final : public troupe::actor<rebalance_request_message> {
 public:
  explicit rebalance_endpoint(std::shared_ptr<const coordinator_directory> runners)
      : runners_(std::move(runners)) {}

 private:
  void receive(rebalance_request_message& m) override;

  std::shared_ptr<const coordinator_directory> runners_;
};

/// Asks the coordinator of `type` for a rebalance now: the local runner, and the endpoint of every
/// member in `addresses` other than `self_address`. Returns false when this node does not run the
/// type (it has no runner for it).
bool ask_every_coordinator_to_rebalance(const coordinator_directory& runners, remote_node& remote,
                                        const std::string& type,
                                        const std::vector<std::string>& addresses,
                                        const std::string& self_address);

/// The home request of `placement`'s type on this node: the local runner, and every other
/// member's endpoint over `remote` (addresses from the placement's view of the members).
/// Holds the placement weakly.
home_request ask_every_coordinator(std::shared_ptr<const coordinator_directory> runners,
                                   remote_node& remote, std::string type,
                                   sharding::coordination::member_id self,
                                   std::shared_ptr<std::weak_ptr<cluster_placement>> placement);

}  // namespace troupe::cluster
