#pragma once
/// INTERNAL. The refs users hold for a region, one entity, or one shard: plain actor refs that
/// stay valid while entities and shards come and go. A message for an entity goes, on the
/// sender's own thread, straight to its shard actor when that shard's route is open
/// (shard_routes.hpp), else to the region; queries for a shard always go through the region.

#include <troupe/core/actor_ref.hpp>
#include <troupe/core/detail/actor_target.hpp>
#include <troupe/core/detail/message_convert.hpp>
#include <troupe/sharding/detail/region_actor.hpp>
#include <troupe/sharding/detail/shard_routes.hpp>
#include <troupe/sharding/entity_path.hpp>
#include <troupe/sharding/shard_id.hpp>

#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <variant>

namespace troupe::sharding::detail {

/// What the three refs share: they stand for the region.
class region_forwarder : public troupe::detail::actor_target {
 public:
  explicit region_forwarder(untyped_ref region) : region_(std::move(region)) {}

  void enqueue(troupe::detail::envelope_base* e) noexcept override { forward(e); }
  void enqueue_any(troupe::detail::envelope_base* e) noexcept override { forward(e); }
  std::error_code try_enqueue(troupe::detail::envelope_base* e) noexcept override {
    forward(e);
    return {};
  }
  /// Takes `e` on its way (to a shard or the region).
  virtual void forward(troupe::detail::envelope_base* e) noexcept = 0;
  void send_system(troupe::detail::system_message* m) noexcept override {
    region_.target()->send_system(m);
  }
  [[nodiscard]] troupe::detail::system_impl* owner() const noexcept override {
    return region_.target()->owner();
  }
  [[nodiscard]] bool is_terminated() const noexcept override { return region_.is_terminated(); }
  void notify_undelivered(std::error_code, const std::string&) noexcept override {}

 protected:
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
  using shard_envelope = troupe::detail::envelope<shard_message<M>>;
  using region_envelope = troupe::detail::envelope<region_message<M>>;

  // The sender's envelope goes on as it is when the shard can read the id from the message
  // itself (a region ref: the extractor): no copy and no allocation on the way to the entity.
  void forward(troupe::detail::envelope_base* e) noexcept override {
    try {
      if (setup_->routes->direct() && !entity_id_ &&
          e->kind == troupe::detail::envelope_kind::user && e->type() == typeid(M)) {
        if (deliver_or_detour(*static_cast<M*>(e->payload()), e)) return;
      }
      auto message = troupe::detail::convert_payload<M>(*e);
      if (!message) {
        region().target()->enqueue_any(e);  // the region dead-letters what it cannot take
        return;
      }
      if (setup_->routes->direct() && deliver_or_detour(*message, e)) return;
      // To the region as it came: it extracts again and rejects with the reason.
      auto* wrapped = entity_id_ ? new region_envelope(std::in_place_type<routed<M>>,
                                                       routed<M>{*entity_id_, std::move(*message)})
                                 : new region_envelope(std::in_place_index<0>, std::move(*message));
      wrapped->sender = std::move(e->sender);
      delete e;
      region().target()->enqueue(wrapped);
    } catch (...) {
      delete e;  // out of memory: nothing sensible left to do
    }
  }

  /// Sends `message` (in `e`, or moved out of it) along its shard's route: straight to the
  /// shard actor when the route is open, else through the region, counted on the route. Takes
  /// `e` and returns true, unless the id or shard cannot be read here (the region then rejects
  /// the message, saying why) or has no route.
  bool deliver_or_detour(M& message, troupe::detail::envelope_base* e) {
    std::string id;
    shard_id shard = 0;
    shard_route<M>* route = nullptr;
    try {
      if (entity_id_) {
        id = *entity_id_;
      } else if (setup_->extract_entity_id) {
        id = setup_->extract_entity_id(message);
      }
      if (id.empty()) return false;
      shard = setup_->extract_shard_id ? setup_->extract_shard_id(id)
                                       : shard_of(id, setup_->settings.num_shards);
      route = setup_->routes->at(shard);
    } catch (const std::exception&) {
      return false;
    }
    if (route == nullptr) return false;
    // The shard reads the id from a message in its own envelope; else it needs a delivery.
    const bool as_is = e->payload() == &message;
    std::unique_ptr<troupe::detail::envelope_base> owned(e);  // taken: the caller must not free it
    try {
      std::lock_guard lock(route->lock);
      if (route->open && route->via_region == 0) {
        if ((++route->sampled & 15U) == 0) {  // carries its send time for the queue-wait figure
          route->deliver_locked(
              delivery(std::move(id), message, *owned, setup_->routes->clock().now()));
        } else if (as_is) {
          route->deliver_locked(owned.release());
        } else {
          route->deliver_locked(delivery(std::move(id), message, *owned, time_point{}));
        }
        return true;
      }
      ++route->via_region;
    } catch (...) {
      return true;  // out of memory making the delivery: the message is lost
    }
    detour(*route, shard, std::move(id), message, *owned);
    return true;
  }

  static shard_envelope* delivery(std::string id, M& message, troupe::detail::envelope_base& e,
                                  time_point sent_at) {
    auto* d = new shard_envelope(std::in_place_type<deliver<M>>, std::move(id), std::move(message),
                                 sent_at);
    d->sender = std::move(e.sender);
    return d;
  }

  /// Hands a message for a shut route to the region, which passes it on and uncounts it.
  void detour(shard_route<M>& route, shard_id shard, std::string id, M& message,
              troupe::detail::envelope_base& e) noexcept {
    try {
      auto* r = new region_envelope(std::in_place_type<through_region<M>>,
                                    through_region<M>{shard, std::move(id), std::move(message)});
      r->sender = std::move(e.sender);
      region().target()->enqueue(r);
    } catch (...) {
      std::lock_guard lock(route.lock);  // out of memory: lost, but must not shut the route
      --route.via_region;
    }
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
  void forward(troupe::detail::envelope_base* e) noexcept override {
    try {
      auto query =
          troupe::detail::convert_payload<std::variant<get_entity_ids, get_shard_stats>>(*e);
      if (!query) {
        region().target()->enqueue_any(e);  // the region dead-letters what it cannot take
        return;
      }
      auto* wrapped = new troupe::detail::envelope<region_message<M>>(
          std::in_place_type<shard_query>, shard_query{shard_, std::move(*query)});
      wrapped->sender = std::move(e->sender);
      delete e;
      region().target()->enqueue(wrapped);
    } catch (...) {
      delete e;  // out of memory: nothing sensible left to do
    }
  }

  shard_id shard_;
};

}  // namespace troupe::sharding::detail
