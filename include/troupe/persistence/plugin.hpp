#pragma once
/// A storage plugin: the four stores over one backend (one in-memory map, one SQLite file...).

#include <troupe/persistence/detail/completion.hpp>
#include <troupe/persistence/detail/initiate.hpp>
#include <troupe/persistence/durable_state_store.hpp>
#include <troupe/persistence/journal.hpp>
#include <troupe/persistence/records.hpp>
#include <troupe/persistence/remember_entities_store.hpp>
#include <troupe/persistence/snapshot_store.hpp>

#include <utility>

namespace troupe::persistence {

/// One backend's journal, snapshot store, durable state store and remember-entities store.
/// Destroying a plugin fails its pending operations with errc::store_closed or finishes them.
/// A completion handler without an executor of its own (a plain callback) may run on a store
/// thread: it must be quick and must not throw.
class plugin {
 public:
  virtual ~plugin() = default;

  [[nodiscard]] virtual persistence::journal& journal() = 0;
  [[nodiscard]] virtual snapshot_store& snapshots() = 0;
  [[nodiscard]] virtual durable_state_store& durable_state() = 0;
  [[nodiscard]] virtual remember_entities_store& remember_entities() = 0;

  /// Writes and transactions so far (group commit shows as fewer transactions than writes).
  [[nodiscard]] virtual write_stats stats() const = 0;

  /// Raises the fence of r.shard to r.epoch in one write, before the shard's entities recover
  /// on a new owner. Completes with fence_raise::raised (also when the fence already is at
  /// r.epoch) or fence_raise::superseded (a newer epoch holds it: give the shard up). From then
  /// on a write naming the shard commits only at the fence's epoch; any other fails with
  /// errc::epoch_fenced. Fails with errc::store_failure.
  template <class Token>
  auto async_raise_shard_fence(shard_fence_raise r, Token&& token) {
    return detail::initiate<fence_raise>(std::forward<Token>(token), std::move(r),
                                         [this](shard_fence_raise req, completion<fence_raise> h) {
                                           do_raise_shard_fence(std::move(req), std::move(h));
                                         });
  }

 protected:
  // What a plugin implements, in the same transaction discipline as its writes (see
  // docs/persistence.md, "Shard fences").
  virtual void do_raise_shard_fence(shard_fence_raise r, completion<fence_raise> h) = 0;
};

}  // namespace troupe::persistence
