#pragma once
/// Remember entities: where a sharded type keeps, per shard, the ids of the entities it started,
/// so that a shard starting anywhere (after a hand-off, a failover or a restart) starts them
/// again without waiting for a message. The sharding layer only drives this seam; the
/// persistence layer implements it over a plugin's remember-entities store
/// (troupe/persistence/remembered_in_store.hpp), and the cluster installs that for every node.
///
/// Writes carry the shard's epoch: a store that fences them refuses the writes of an owner a
/// newer allocation replaced, as it does for journals.

#include <troupe/core/clock.hpp>
#include <troupe/sharding/placement.hpp>
#include <troupe/sharding/shard_id.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

namespace troupe::sharding {

/// One sharded type's remembered ids. Handlers may run on any thread, once each.
class remembered_entities {
 public:
  using shards_handler = std::function<void(std::error_code, std::vector<shard_id>)>;
  using ids_handler = std::function<void(std::error_code, std::vector<std::string>)>;
  /// `superseded`: the store refused the write because a newer owner of the shard has written.
  using done_handler = std::function<void(std::error_code, bool superseded)>;

  virtual ~remembered_entities() = default;

  /// The shards that remember at least one id.
  virtual void list_shards(shards_handler done) = 0;
  /// The ids `shard` remembers.
  virtual void list(shard_id shard, ids_handler done) = 0;
  /// Adds `added`, then removes `removed`, in one write made as the owner of `shard` at
  /// `epoch` (0: no cluster placed it). Fails, superseded, once a newer owner has written.
  virtual void update(shard_id shard, shard_epoch epoch, std::vector<std::string> added,
                      std::vector<std::string> removed, done_handler done) = 0;
};

/// Bounds how fast one type's shards start their remembered entities together (no thundering
/// herd when many shards start at once): a token bucket refilled at `per_second`, holding at
/// most a tenth of a second's worth. Thread-safe.
class start_budget {
 public:
  explicit start_budget(double per_second);

  /// Takes up to `wanted` starts allowed at `now`; returns how many it took (maybe 0).
  std::size_t take(std::size_t wanted, time_point now);

 private:
  std::mutex mutex_;
  double per_second_;
  double capacity_;
  double tokens_;
  time_point last_{};
};

}  // namespace troupe::sharding
