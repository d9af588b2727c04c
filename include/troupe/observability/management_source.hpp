#pragma once
/// What the management HTTP API (management_server.hpp) reads and asks of a node, as plain
/// values behind one small interface: the server renders them as JSON and never sees a cluster,
/// so it is tested with a fake source; make_cluster_management_source
/// (cluster_management_source.hpp) is the real one over a cluster_node.

#include <troupe/sharding/shard_id.hpp>

#include <boost/system/result.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace troupe::observability {

/// Why a source could not answer; the server maps each code to an HTTP status.
enum class management_errc {
  not_found,        // 404: no such type (not started on this node)
  unavailable,      // 503: the node cannot tell now (store unreachable, not joined, timed out)
  not_implemented,  // 501: the runtime has no such operation yet
  conflict,         // 409: the operation cannot run in the node's state
  internal,         // 500: the source failed unexpectedly
};

struct management_error {
  management_errc code = management_errc::internal;
  /// One sentence for the operator; it goes into the JSON error body.
  std::string message;
};

/// A source's answer: the value, or why there is none.
template <class T>
using management_result = boost::system::result<T, management_error>;

/// A member of the cluster, as the node reads it.
struct member_view {
  std::string node;
  std::int64_t incarnation = 0;
  std::vector<std::string> roles;
  bool leaving = false;
  std::string app_version;
  /// Where its transport listens ("host:port").
  std::string address;
  /// How this node reaches it: "self", "connected", "not connected" or "unreachable".
  std::string reachability;
};

struct members_view {
  std::string cluster;
  /// This node's id.
  std::string self;
  std::vector<member_view> members;
};

/// One shard of a type.
struct shard_view {
  sharding::shard_id shard = 0;
  /// The node that hosts it (empty while it has no home).
  std::string owner;
  /// The epoch of its allocation (0 without one).
  std::int64_t epoch = 0;
  /// The owner is a member (false while the coordinator is about to move it).
  bool owner_is_member = true;
  /// Hosted on this node; the figures below are known only then.
  bool local = false;
  bool resident = false;
  std::size_t entities = 0;
  std::uint64_t messages = 0;
  /// Messages per second since the previous read of this type's shards on this node, when one
  /// was made.
  std::optional<double> messages_per_second;
  /// Its hottest entity ids of the last 30 to 60 seconds with their estimated message counts,
  /// hottest first (a few at most; known only when local).
  std::vector<std::pair<std::string, std::uint64_t>> hot_keys;
};

struct shards_view {
  std::string type;
  std::uint32_t num_shards = 0;
  /// The node whose coordinator leads the type (empty: unknown or none).
  std::string coordinator;
  /// Shards with an allocation or known to this node, by id.
  std::vector<shard_view> shards;
};

/// The sharded types started on this node.
struct types_view {
  /// Sorted by name.
  std::vector<std::string> types;
};

/// Where one entity lives.
struct entity_view {
  std::string type;
  std::string id;
  sharding::shard_id shard = 0;
  /// The node that hosts the shard (empty while it has no home).
  std::string owner;
  std::int64_t epoch = 0;
  bool local = false;
  /// Whether the entity runs now: known only where its shard is hosted on this node.
  std::optional<bool> active;
};

/// Whether the node should take traffic.
struct readiness_view {
  bool ready = false;
  /// Why not (empty when ready).
  std::string reason;
};

/// What a leave request started.
struct leave_view {
  std::string node;
  /// A leave was already under way: nothing new was started.
  bool already_leaving = false;
};

/// The data and operations behind the management API. Every method may block for a bounded
/// time (the server calls them off its I/O thread) and is called from any thread; none throws
/// (the server answers 500 for an exception, but a source should return management_errc).
class management_source {
 public:
  virtual ~management_source() = default;

  /// The members of the cluster.
  [[nodiscard]] virtual management_result<members_view> members() = 0;
  /// The sharded types started on this node.
  [[nodiscard]] virtual management_result<types_view> types() = 0;
  /// The shards of a started type; management_errc::not_found for an unknown type.
  [[nodiscard]] virtual management_result<shards_view> shards(const std::string& type) = 0;
  /// Where the entity `id` of `type` lives (its shard, the shard's owner, whether it runs).
  [[nodiscard]] virtual management_result<entity_view> entity(const std::string& type,
                                                              const std::string& id) = 0;
  /// Ready for traffic: joined, and every started type's region registered and read.
  [[nodiscard]] virtual readiness_view readiness() = 0;
  /// The node's metrics in the Prometheus text format; nullopt when it has no registry.
  [[nodiscard]] virtual std::optional<std::string> metrics_text() = 0;
  /// Starts a graceful leave of this node.
  [[nodiscard]] virtual management_result<leave_view> leave() = 0;
  /// Rebalances the shards of `type` now.
  [[nodiscard]] virtual management_result<void> rebalance(const std::string& type) = 0;
};

}  // namespace troupe::observability
