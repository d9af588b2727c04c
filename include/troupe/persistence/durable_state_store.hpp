#pragma once
/// The durable state store: per persistence id, one current value with a revision number that
/// every write checks (optimistic concurrency).

#include <troupe/persistence/detail/completion.hpp>
#include <troupe/persistence/detail/initiate.hpp>
#include <troupe/persistence/records.hpp>

#include <optional>
#include <utility>

namespace troupe::persistence {

/// Upserts, gets and deletes durable states. Implementations are thread-safe.
class durable_state_store {
 public:
  virtual ~durable_state_store() = default;

  /// Writes w.value when the stored revision is w.expected_revision (0: nothing stored).
  /// Completes with the new revision (expected + 1), or fails with errc::revision_conflict,
  /// errc::epoch_fenced or errc::store_failure.
  template <class Token>
  auto async_upsert(state_write w, Token&& token) {
    return detail::initiate<revision_nr>(std::forward<Token>(token), std::move(w),
                                         [this](state_write req, completion<revision_nr> h) {
                                           do_upsert(std::move(req), std::move(h));
                                         });
  }

  /// The stored state, or nullopt.
  template <class Token>
  auto async_get(std::string persistence_id, Token&& token) {
    return detail::initiate<std::optional<durable_state_record>>(
        std::forward<Token>(token), std::move(persistence_id),
        [this](std::string pid, completion<std::optional<durable_state_record>> h) {
          do_get(std::move(pid), std::move(h));
        });
  }

  /// Deletes the state when its revision is d.expected_revision; the next upsert then expects
  /// revision 0. The epoch fence survives the delete.
  template <class Token>
  auto async_delete(state_delete d, Token&& token) {
    return detail::initiate_void(
        std::forward<Token>(token), std::move(d),
        [this](state_delete req, void_completion h) { do_delete(std::move(req), std::move(h)); });
  }

 protected:
  virtual void do_upsert(state_write w, completion<revision_nr> h) = 0;
  virtual void do_get(std::string persistence_id,
                      completion<std::optional<durable_state_record>> h) = 0;
  virtual void do_delete(state_delete d, void_completion h) = 0;
};

}  // namespace troupe::persistence
