#pragma once
/// A typed handle on one shard of a sharded type (cluster_sharding::shard): asks for its entity
/// ids and its figures with the reply types already known, by completion token like ask.

#include <troupe/core/actor_ref.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/sharding/messages.hpp>
#include <troupe/sharding/shard_id.hpp>
#include <troupe/sharding/shard_stats.hpp>

#include <boost/asio/use_awaitable.hpp>

#include <string>
#include <utility>
#include <vector>

namespace troupe::sharding {

/// One shard of a type on this node, valid across the shard actor's passivation. A shard that
/// is not running answers as an empty one; asking does not start it.
class shard_ref {
 public:
  shard_ref() = default;
  shard_ref(untyped_ref ref, shard_id id) : ref_(std::move(ref)), id_(id) {}

  /// The ids of the entities running in the shard: an asio::awaitable by default,
  /// a std::future with troupe::use_future.
  template <class Token = boost::asio::use_awaitable_t<>>
  auto entity_ids(duration timeout, Token&& token = {}) const {
    return ref_.ask_any<std::vector<std::string>>(get_entity_ids{}, timeout,
                                                  std::forward<Token>(token));
  }
  /// The running shard actor's own figures (all zero when it is not running).
  template <class Token = boost::asio::use_awaitable_t<>>
  auto stats(duration timeout, Token&& token = {}) const {
    return ref_.ask_any<shard_stats>(get_shard_stats{}, timeout, std::forward<Token>(token));
  }

  [[nodiscard]] shard_id id() const noexcept { return id_; }
  /// The shard's path, .../region-<type>/shard-<n>.
  [[nodiscard]] std::string path() const { return ref_.path(); }
  /// The untyped ref (shard_ref_for's), which takes get_entity_ids and get_shard_stats.
  [[nodiscard]] const untyped_ref& untyped() const noexcept { return ref_; }

 private:
  untyped_ref ref_;
  shard_id id_ = 0;
};

}  // namespace troupe::sharding
