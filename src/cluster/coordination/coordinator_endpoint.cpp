#include "cluster/coordination/coordinator_endpoint.hpp"

#include <troupe/core/actor_system.hpp>

#include "cluster/coordination/coordination_keys.hpp"

#include <stdexcept>
#include <utility>

namespace troupe::cluster {

void coordinator_endpoint::receive(home_request_message& m) {
  // A question, not a user's message: one this node cannot answer (a type it does not run, a
  // malformed asker) is dropped, and the asker asks again.
  if (m.node.empty() || m.incarnation <= 0) {
    troupe::logger()->warn("coordinator endpoint: a home request with no asker (type '{}')",
                           m.type);
    return;
  }
  if (auto runner = runners_->find(m.type)) {
    runner->request_home({m.node, m.incarnation}, m.shard);
  }
}

void rebalance_endpoint::receive(rebalance_request_message& m) {
  if (auto runner = runners_->find(m.type)) {
    runner->request_rebalance();
  }
}

bool ask_every_coordinator_to_rebalance(const coordinator_directory& runners, remote_node& remote,
                                        const std::string& type,
                                        const std::vector<std::string>& addresses,
                                        const std::string& self_address) {
  auto runner = runners.find(type);
  if (!runner) return false;
  runner->request_rebalance();
  const rebalance_request_message m{type};
  for (const auto& address : addresses) {
    if (address == self_address) continue;
    if (auto at = parse_node_address(address)) {
      remote.ref_to<rebalance_request_message>(*at, rebalance_endpoint_path).tell(m);
    }
  }
  return true;
}

home_request ask_every_coordinator(std::shared_ptr<const coordinator_directory> runners,
                                   remote_node& remote, std::string type,
                                   sharding::coordination::member_id self,
                                   std::shared_ptr<std::weak_ptr<cluster_placement>> placement) {
  return [runners = std::move(runners), remote = &remote, type = std::move(type),
          self = std::move(self), placement = std::move(placement)](sharding::shard_id shard) {
    if (auto runner = runners->find(type)) runner->request_home(self, shard);
    auto p = placement->lock();
    if (!p) return;
    const home_request_message m{type, self.node, self.incarnation, shard};
    for (const auto& [id, address] : p->members()) {
      if (id == self) continue;
      if (auto at = parse_node_address(address)) {
        remote->ref_to<home_request_message>(*at, coordinator_endpoint_path).tell(m);
      }
    }
  };
}

}  // namespace troupe::cluster
