#pragma once
/// INTERNAL. The refs users hold for a region, one entity, or one shard: each wraps what it is
/// given into the region's own message type and hands it to the region, so that these refs are
/// plain actor refs and stay valid while entities and shards come and go.

#include <troupe/core/actor_ref.hpp>
#include <troupe/core/detail/actor_target.hpp>
#include <troupe/core/detail/message_convert.hpp>
#include <troupe/sharding/detail/region_actor.hpp>
#include <troupe/sharding/entity_path.hpp>

#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <variant>

namespace troupe::sharding::detail {

/// What the three refs share: everything goes to the region, after wrap().
class region_forwarder : public troupe::detail::actor_target {
 public:
  explicit region_forwarder(untyped_ref region) : region_(std::move(region)) {}

  void enqueue(troupe::detail::envelope_base* e) noexcept override { forward(e); }
  void enqueue_any(troupe::detail::envelope_base* e) noexcept override { forward(e); }
  std::error_code try_enqueue(troupe::detail::envelope_base* e) noexcept override {
    forward(e);
    return {};
  }
  void send_system(troupe::detail::system_message* m) noexcept override {
    region_.target()->send_system(m);
  }
  [[nodiscard]] troupe::detail::system_impl* owner() const noexcept override {
    return region_.target()->owner();
  }
  [[nodiscard]] bool is_terminated() const noexcept override { return region_.is_terminated(); }
  void notify_undelivered(std::error_code, const std::string&) noexcept override {}

 protected:
  /// The region's own envelope for `e`'s payload, or null when the payload does not fit.
  virtual troupe::detail::envelope_base* wrap(troupe::detail::envelope_base& e) = 0;
  [[nodiscard]] const untyped_ref& region() const noexcept { return region_; }

 private:
  void forward(troupe::detail::envelope_base* e) noexcept {
    try {
      troupe::detail::envelope_base* wrapped = wrap(*e);
      if (wrapped == nullptr) {
        region_.target()->enqueue_any(e);  // the region dead-letters what it cannot take
        return;
      }
      wrapped->sender = std::move(e->sender);
      delete e;
      region_.target()->enqueue(wrapped);
    } catch (...) {
      delete e;  // out of memory: nothing sensible left to do
    }
  }

  untyped_ref region_;
};

/// The ref for a region (messages routed by the extractor) or for one entity (by its id).
template <class M>
class region_ingress final : public region_forwarder {
 public:
  region_ingress(untyped_ref region, std::optional<std::string> entity_id)
      : region_forwarder(std::move(region)), entity_id_(std::move(entity_id)) {}

  [[nodiscard]] std::string path() const override {
    return entity_id_ ? region().path() + "#" + *entity_id_ : region().path();
  }

 private:
  troupe::detail::envelope_base* wrap(troupe::detail::envelope_base& e) override {
    auto message = troupe::detail::convert_payload<M>(e);
    if (!message) return nullptr;
    if (entity_id_) {
      return new troupe::detail::envelope<region_message<M>>(
          std::in_place_type<routed<M>>, routed<M>{*entity_id_, std::move(*message)});
    }
    return new troupe::detail::envelope<region_message<M>>(std::in_place_index<0>,
                                                           std::move(*message));
  }

  std::optional<std::string> entity_id_;
};

/// The ref for one shard (shard_ref_for): takes get_entity_ids and get_shard_stats, and outlives
/// the shard actor's passivation.
template <class M>
class shard_ingress final : public region_forwarder {
 public:
  shard_ingress(untyped_ref region, shard_id shard)
      : region_forwarder(std::move(region)), shard_(shard) {}

  [[nodiscard]] std::string path() const override {
    return region().path() + "/" + shard_child_name(shard_);
  }

 private:
  troupe::detail::envelope_base* wrap(troupe::detail::envelope_base& e) override {
    auto query = troupe::detail::convert_payload<std::variant<get_entity_ids, get_shard_stats>>(e);
    if (!query) return nullptr;
    return new troupe::detail::envelope<region_message<M>>(std::in_place_type<shard_query>,
                                                           shard_query{shard_, std::move(*query)});
  }

  shard_id shard_;
};

}  // namespace troupe::sharding::detail
