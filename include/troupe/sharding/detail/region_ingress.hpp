#pragma once
/// INTERNAL. The refs users hold for a region, one entity, or one shard. The first two route
/// each message to its entity on the sender's thread (route.hpp); the shard's wraps its query
/// for the region. All are plain actor refs and stay valid while entities and shards come and go.

#include <troupe/core/actor_ref.hpp>
#include <troupe/core/detail/actor_target.hpp>
#include <troupe/core/detail/message_convert.hpp>
#include <troupe/sharding/detail/region_setup.hpp>
#include <troupe/sharding/detail/route.hpp>
#include <troupe/sharding/entity_path.hpp>

#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <variant>

namespace troupe::sharding::detail {

/// What the refs share: they stand for the region (its owner, its liveness, its system
/// messages) and hand each message on through deliver().
class region_forwarder : public troupe::detail::actor_target {
 public:
  explicit region_forwarder(untyped_ref region) : region_(std::move(region)) {}

  void enqueue(troupe::detail::envelope_base* e) noexcept override { deliver(e); }
  void enqueue_any(troupe::detail::envelope_base* e) noexcept override { deliver(e); }
  std::error_code try_enqueue(troupe::detail::envelope_base* e) noexcept override {
    deliver(e);
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
  /// Takes `e`; what does not fit goes to the region, which dead-letters it.
  virtual void deliver(troupe::detail::envelope_base* e) noexcept = 0;
  [[nodiscard]] const untyped_ref& region() const noexcept { return region_; }

 private:
  untyped_ref region_;
};

/// The ref for a region (messages routed by the extractor) or for one entity (by its id).
template <class M>
class region_ingress final : public region_forwarder {
 public:
  region_ingress(untyped_ref region, std::shared_ptr<const region_setup<M>> setup,
                 std::optional<std::string> entity_id)
      : region_forwarder(std::move(region)),
        setup_(std::move(setup)),
        entity_id_(std::move(entity_id)) {}

  [[nodiscard]] std::string path() const override {
    return entity_id_ ? region().path() + "#" + *entity_id_ : region().path();
  }

 private:
  void deliver(troupe::detail::envelope_base* e) noexcept override {
    const std::string* id = entity_id_ ? &*entity_id_ : nullptr;
    if (e->kind == troupe::detail::envelope_kind::user && e->type() == typeid(M)) {
      route(*setup_, region(), static_cast<troupe::detail::envelope<M>*>(e), id);  // as it is
      return;
    }
    troupe::detail::envelope<M>* converted = nullptr;
    try {
      auto message = troupe::detail::convert_payload<M>(*e);
      if (!message) {
        region().target()->enqueue_any(e);  // the region dead-letters what it cannot take
        return;
      }
      converted = new troupe::detail::envelope<M>(std::move(*message));
    } catch (...) {
      delete e;  // out of memory: nothing sensible left to do
      return;
    }
    converted->sender = std::move(e->sender);
    delete e;
    route(*setup_, region(), converted, id);
  }

  std::shared_ptr<const region_setup<M>> setup_;
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
  void deliver(troupe::detail::envelope_base* e) noexcept override {
    try {
      auto query =
          troupe::detail::convert_payload<std::variant<get_entity_ids, get_shard_stats>>(*e);
      if (!query) {
        region().target()->enqueue_any(e);
        return;
      }
      auto* wrapped = new troupe::detail::envelope<region_message<M>>(
          std::in_place_type<shard_query>, shard_query{shard_, std::move(*query)});
      wrapped->sender = std::move(e->sender);
      delete e;
      region().target()->enqueue(wrapped);
    } catch (...) {
      delete e;
    }
  }

  shard_id shard_;
};

}  // namespace troupe::sharding::detail
