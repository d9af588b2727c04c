#pragma once
/// What the coordinator knows of the cluster, as plain values read from the consensus store:
/// members (a node incarnation with its roles), the regions of one sharded type, and the
/// allocations of its shards. The sharding layer holds no network code, so these carry only what
/// the decisions need; the cluster layer fills them from its keys.

#include <troupe/sharding/shard_id.hpp>

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::sharding::coordination {

/// A consensus-store revision (etcd's: one cluster-wide counter, +1 per modifying request).
using store_revision = std::int64_t;

/// One incarnation of a node: the node's id and the incarnation that joined (its lease). A node
/// that restarts comes back as a new incarnation and is a different member.
struct member_id {
  std::string node;
  std::int64_t incarnation = 0;

  friend bool operator==(const member_id&, const member_id&) = default;
  friend std::strong_ordering operator<=>(const member_id&, const member_id&) = default;
};

/// A member as its key says (the key exists while the member's lease lives).
struct member_info {
  member_id id;
  /// The roles the node was started with.
  std::vector<std::string> roles;
  /// The member announced a graceful leave: it is the last choice for new shards.
  bool leaving = false;
  /// The application's version, dot-separated numbers (e.g. "1.10.2"); newer versions are
  /// preferred for new shards. Empty sorts before every version.
  std::string app_version;

  friend bool operator==(const member_info&, const member_info&) = default;
};

/// A region of the coordinated type on a member (its registration key).
struct region_info {
  member_id id;
  /// A proxy routes and never hosts a shard.
  bool proxy = false;

  friend bool operator==(const region_info&, const region_info&) = default;
};

/// A shard's allocation: its owner, and the revision that wrote it (the shard's epoch).
struct allocation {
  shard_id shard = 0;
  member_id owner;
  /// The allocation key's mod revision: the shard's epoch.
  store_revision mod_revision = 0;

  friend bool operator==(const allocation&, const allocation&) = default;
};

/// A hand-off in progress, as its key says: `shard` leaves `from`, whose allocation of epoch
/// `from_epoch` it has, for `to`. The key's mod revision names the hand-off; the old owner reports
/// the shard stopped by writing a stopped key naming that revision.
struct handoff {
  shard_id shard = 0;
  member_id from;
  member_id to;
  /// The allocation's mod revision the shard moves from (the old owner's epoch).
  store_revision from_epoch = 0;
  /// The hand-off key's mod revision: the hand-off's name.
  store_revision revision = 0;
  /// The old owner reported the shard stopped for this hand-off.
  bool stopped = false;

  friend bool operator==(const handoff&, const handoff&) = default;
};

/// A shard's message rate, as the region hosting it last reported it.
struct shard_load {
  shard_id shard = 0;
  /// Messages its entities were delivered per second, over the region's last report interval.
  double per_second = 0;

  friend bool operator==(const shard_load&, const shard_load&) = default;
};

/// A region's last report of its shards' message rates (its load key; by shard, ascending).
struct load_report {
  member_id region;
  std::vector<shard_load> loads;

  friend bool operator==(const load_report&, const load_report&) = default;
};

/// Orders application versions: dot-separated parts, compared as numbers when both are digits
/// and as text otherwise; a missing part sorts first ("1.2" < "1.2.0" < "1.10").
[[nodiscard]] std::strong_ordering compare_app_versions(std::string_view a, std::string_view b);

}  // namespace troupe::sharding::coordination
