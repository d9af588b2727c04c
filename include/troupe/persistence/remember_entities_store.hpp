#pragma once
/// The remember-entities store: per (entity type, shard), the set of entity ids to restart when
/// the shard starts again (used by the cluster layer). Updates are batched: one write adds and
/// removes many ids, and the fence key is the shard.

#include <troupe/persistence/detail/completion.hpp>
#include <troupe/persistence/detail/initiate.hpp>
#include <troupe/persistence/records.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace troupe::persistence {

/// Adds, removes and lists remembered entity ids. Implementations are thread-safe.
class remember_entities_store {
 public:
  virtual ~remember_entities_store() = default;

  /// Adds u.added, then removes u.removed, atomically. Adding a present id or removing an absent
  /// one is not an error. Fails with errc::epoch_fenced (epochs per type and shard).
  template <class Token>
  auto async_update(remember_update u, Token&& token) {
    return detail::initiate_void(std::forward<Token>(token), std::move(u),
                                 [this](remember_update req, void_completion h) {
                                   do_update(std::move(req), std::move(h));
                                 });
  }

  /// The remembered ids of one shard, sorted.
  template <class Token>
  auto async_list(remember_query q, Token&& token) {
    return detail::initiate<std::vector<std::string>>(
        std::forward<Token>(token), std::move(q),
        [this](remember_query req, completion<std::vector<std::string>> h) {
          do_list(std::move(req), std::move(h));
        });
  }

  /// The shards of `type_name` that remember at least one id, sorted.
  template <class Token>
  auto async_list_shards(std::string type_name, Token&& token) {
    return detail::initiate<std::vector<std::uint32_t>>(
        std::forward<Token>(token), std::move(type_name),
        [this](std::string type, completion<std::vector<std::uint32_t>> h) {
          do_list_shards(std::move(type), std::move(h));
        });
  }

 protected:
  virtual void do_update(remember_update u, void_completion h) = 0;
  virtual void do_list(remember_query q, completion<std::vector<std::string>> h) = 0;
  virtual void do_list_shards(std::string type_name, completion<std::vector<std::uint32_t>> h) = 0;
};

}  // namespace troupe::persistence
