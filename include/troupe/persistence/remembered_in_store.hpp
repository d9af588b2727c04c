#pragma once
/// Remember entities kept in a persistence plugin's remember-entities store: the sharding
/// layer's remembered_entities seam over remember_entities_store, its writes fenced per shard as
/// the journal's are (a shard's writes carry its epoch and check the shard's owner fence).
///
///     troupe::persistence::remember_entities_in_plugins(system);  // one node, no cluster
///     sharding.start(options.with_remember_entities());
///
/// Joining a cluster does this for every node (cluster_node::join).

#include <troupe/core/actor_system.hpp>
#include <troupe/persistence/plugin.hpp>
#include <troupe/sharding/remembered_entities.hpp>

#include <memory>
#include <string>

namespace troupe::persistence {

/// The remembered entities of sharded type `type_name` in `store` (not null).
std::shared_ptr<sharding::remembered_entities> remembered_in(std::shared_ptr<plugin> store,
                                                             std::string type_name);

/// Makes each type that remembers its entities keep them in its plugin
/// (persistence_extension::plugin_for): types started from now on.
void remember_entities_in_plugins(actor_system& system);

}  // namespace troupe::persistence
