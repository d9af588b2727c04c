#pragma once
/// A cluster as one node reads it, for operators and tests (cluster_node::read_state()): the
/// members with how this node reaches each one, and per sharded type its coordinator, its
/// regions and where each allocated shard lives, at what epoch. Members, regions and
/// allocations come from one read of the consensus store, so they agree with each other: an
/// allocation whose owner is no member any more is one the coordinator is about to replace.

#include <troupe/sharding/coordination/cluster_view.hpp>
#include <troupe/sharding/placement.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace troupe::cluster {

/// How the reading node reaches a member over the remoting.
enum class reachability {
  self,           // the reading node
  connected,      // a connection is up
  not_connected,  // no connection is up and none failed (none was needed yet, or one is opening)
  unreachable,    // the last connection fell silent, or none got through: messages wait
};

[[nodiscard]] const char* to_string(reachability r) noexcept;

/// A member: node id, incarnation, roles, whether it leaves, its application version.
struct member_state {
  sharding::coordination::member_info info;
  /// Where its transport listens ("host:port").
  std::string address;
  reachability reach = reachability::not_connected;
};

/// A region of a sharded type.
struct region_entry {
  sharding::coordination::member_id id;
  bool proxy = false;
  /// Shards allocated to it.
  std::size_t shards = 0;
};

/// Where one allocated shard lives.
struct shard_placement {
  sharding::shard_id shard = 0;
  sharding::coordination::member_id owner;
  /// The allocation's revision: the epoch every message to the shard carries.
  sharding::shard_epoch epoch = 0;
  /// The owner is a member: false while its shards wait for the coordinator to move them.
  bool owner_is_member = false;
};

/// One sharded type across the cluster.
struct type_state {
  std::string type;
  /// The node whose coordinator leads the type (empty while no candidate runs).
  std::string coordinator;
  std::vector<region_entry> regions;  // ordered by member
  /// Allocated shards, by id; shards never used have no allocation.
  std::vector<shard_placement> shards;
};

struct cluster_state {
  std::string cluster;
  /// The consensus store's revision the state was read at.
  std::int64_t revision = 0;
  std::vector<member_state> members;  // ordered by member
  std::vector<type_state> types;      // ordered by type name
};

}  // namespace troupe::cluster
