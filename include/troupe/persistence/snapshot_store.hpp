#pragma once
/// The snapshot store: per persistence id, states taken at some sequence numbers, so recovery
/// replays only the events after the latest one.

#include <troupe/persistence/detail/completion.hpp>
#include <troupe/persistence/detail/initiate.hpp>
#include <troupe/persistence/records.hpp>

#include <optional>
#include <utility>

namespace troupe::persistence {

/// Saves, loads and deletes snapshots. Implementations are thread-safe.
class snapshot_store {
 public:
  virtual ~snapshot_store() = default;

  /// Saves a snapshot (replacing one at the same sequence number); fails with
  /// errc::epoch_fenced or errc::store_failure.
  template <class Token>
  auto async_save(snapshot_write w, Token&& token) {
    return detail::initiate_void(
        std::forward<Token>(token), std::move(w),
        [this](snapshot_write req, void_completion h) { do_save(std::move(req), std::move(h)); });
  }

  /// The latest snapshot at or below q.max_sequence, or nullopt.
  template <class Token>
  auto async_load(snapshot_query q, Token&& token) {
    return detail::initiate<std::optional<snapshot_record>>(
        std::forward<Token>(token), std::move(q),
        [this](snapshot_query req, completion<std::optional<snapshot_record>> h) {
          do_load(std::move(req), std::move(h));
        });
  }

  /// Deletes the snapshots at or below d.max_sequence.
  template <class Token>
  auto async_delete(snapshot_delete d, Token&& token) {
    return detail::initiate_void(std::forward<Token>(token), std::move(d),
                                 [this](snapshot_delete req, void_completion h) {
                                   do_delete(std::move(req), std::move(h));
                                 });
  }

 protected:
  virtual void do_save(snapshot_write w, void_completion h) = 0;
  virtual void do_load(snapshot_query q, completion<std::optional<snapshot_record>> h) = 0;
  virtual void do_delete(snapshot_delete d, void_completion h) = 0;
};

}  // namespace troupe::persistence
