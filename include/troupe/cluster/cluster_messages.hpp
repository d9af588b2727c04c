#pragma once
/// The messages the cluster itself sends between nodes. Add them to the registry every node's
/// remoting uses before the node starts:
///
///   auto registry = std::make_shared<troupe::cluster::message_registry>();
///   troupe::cluster::add_cluster_messages(*registry);

#include <troupe/cluster/message_registry.hpp>

#include <boost/describe/class.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace troupe::cluster {

/// A region's question to the coordinator of `type`: where does `shard` live? Sent to the
/// coordinator endpoint of every member (only the leader's runner answers, by writing the
/// allocation the asker watches for).
struct home_request_message {
  std::string type;
  /// The asking incarnation: its node id and lease.
  std::string node;
  std::int64_t incarnation = 0;
  std::uint32_t shard = 0;
};
BOOST_DESCRIBE_STRUCT(home_request_message, (), (type, node, incarnation, shard))

/// A message for an entity of `type`, sent by one node's region to the delivery endpoint of the
/// node that owns the entity's shard at `epoch` (as the sender knows it). The entity's message
/// travels encoded under its own manifest.
struct sharded_delivery {
  std::string type;
  std::uint32_t shard = 0;
  std::int64_t epoch = 0;
  std::string entity_id;
  std::string manifest;
  std::uint32_t version = 0;
  std::vector<std::byte> payload;
  /// Non-zero: no message but a flush marker of the sending region with this token, behind its
  /// earlier messages for the shard (docs/cluster.md, "Order"); its sender gets it back with
  /// `flushed` set once they are delivered.
  std::uint64_t flush = 0;
  bool flushed = false;
};
BOOST_DESCRIBE_STRUCT(sharded_delivery, (),
                      (type, shard, epoch, entity_id, manifest, version, payload, flush, flushed))

/// Registers the cluster's own messages (manifests `troupe.cluster.*`).
inline void add_cluster_messages(message_registry& registry) {
  registry.add<home_request_message>("troupe.cluster.home_request");
  registry.add<sharded_delivery>("troupe.cluster.sharded_delivery");
}

}  // namespace troupe::cluster
