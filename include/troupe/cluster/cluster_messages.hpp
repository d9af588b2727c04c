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
#include <memory>
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

/// An operator's request for a rebalance of `type` now, sent to the coordinator endpoint of every
/// member (only the leader's runner acts on it).
struct rebalance_request_message {
  std::string type;
};
BOOST_DESCRIBE_STRUCT(rebalance_request_message, (), (type))

/// A message for an entity of `type`, sent by one node's region to the delivery endpoint of the
/// node that owns the entity's shard at `epoch` (as the sender knows it); or a flush marker.
/// The entity's message travels under its own manifest, encoded once, straight into the frame:
/// the sending node keeps it in the envelope it came in until the remoting writes it, and the
/// receiving node decodes it into an envelope of its own, which goes on to the shard as it is.
/// Only the remoting writes and reads one (the receiving side needs its registry).
struct sharded_delivery {
  std::string type;
  std::uint32_t shard = 0;
  std::int64_t epoch = 0;
  std::string entity_id;
  /// Non-zero: no message but a flush marker of the sending region with this token, behind its
  /// earlier messages for the shard (docs/cluster.md, "Order"); its sender gets it back with
  /// `flushed` set once they are delivered.
  std::uint64_t flush = 0;
  bool flushed = false;
  /// A flush marker's: the node whose region sent it first (nodes that pass it on keep it).
  std::string origin;
  /// A message's: the run (member incarnation) of the node it first left, and how many of that
  /// node's flushes of the shard had timed out then (sharding::origin_stamp).
  std::int64_t origin_run = 0;
  std::uint32_t origin_round = 0;

  /// The message's type (its manifest, how it is written and read).
  const message_registry::entry* entry = nullptr;
  /// The envelope the message is in, and the message inside it (`value`).
  std::unique_ptr<troupe::detail::envelope_base> message;
  const void* value = nullptr;
  /// Or the message already encoded, when its sender keeps the envelope (a region's own send).
  std::vector<std::byte> encoded;

  /// A delivery of `m` (a copy, in an envelope of its own) under `entry`, the entry of M.
  template <class M>
  static sharded_delivery carrying(const message_registry::entry& entry, M m) {
    sharded_delivery d;
    auto* e = new troupe::detail::envelope<M>(std::move(m));
    d.message.reset(e);
    d.value = e->payload();
    d.entry = &entry;
    return d;
  }
};

namespace detail {
/// sharded_delivery on the wire: string type, varint shard, int64 epoch, string entity_id,
/// varint flush, bool flushed; then, unless a flush marker, string manifest, varint version
/// and the message's bytes (the rest).
void write_sharded_delivery(persistence::byte_writer& w, const sharded_delivery& d);
/// Throws persistence_error for malformed bytes, cluster_error(unknown_manifest) for a message
/// type this node's registry does not know or outside the remoting.
sharded_delivery read_sharded_delivery(persistence::byte_reader& r);
}  // namespace detail

}  // namespace troupe::cluster

namespace troupe::persistence {

template <>
struct codec<troupe::cluster::sharded_delivery> {
  static void encode(byte_writer& w, const troupe::cluster::sharded_delivery& d) {
    troupe::cluster::detail::write_sharded_delivery(w, d);
  }
  static troupe::cluster::sharded_delivery decode(byte_reader& r) {
    return troupe::cluster::detail::read_sharded_delivery(r);
  }
};

}  // namespace troupe::persistence

namespace troupe::cluster {

/// Registers the cluster's own messages (manifests `troupe.cluster.*`).
inline void add_cluster_messages(message_registry& registry) {
  registry.add<home_request_message>("troupe.cluster.home_request");
  registry.add<rebalance_request_message>("troupe.cluster.rebalance_request");
  registry.add<sharded_delivery>("troupe.cluster.sharded_delivery");
}

}  // namespace troupe::cluster
