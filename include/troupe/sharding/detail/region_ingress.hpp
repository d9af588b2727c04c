#pragma once
/// INTERNAL. The refs users hold for a region, one entity, or one shard: plain actor refs that
/// stay valid while entities and shards come and go. A message for an entity goes, on the
/// sender's own thread, straight to its shard actor when that shard's route is open
/// (shard_routes.hpp), else to the region; queries for a shard always go through the region.

#include <troupe/core/actor_ref.hpp>
#include <troupe/core/detail/actor_target.hpp>
#include <troupe/core/detail/message_convert.hpp>
#include <troupe/sharding/detail/back_pressure.hpp>
#include <troupe/sharding/detail/region_actor.hpp>
#include <troupe/sharding/detail/shard_routes.hpp>
#include <troupe/sharding/detail/undelivered.hpp>
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
  /// Sends `wrapped` (the region's own envelope for `e`'s payload) to the region in `e`'s place.
  void replace_to_region(std::unique_ptr<troupe::detail::envelope_base>& e,
                         troupe::detail::envelope_base* wrapped) noexcept {
    wrapped->sender = std::move(e->sender);
    e.reset();
    region_.target()->enqueue(wrapped);
  }

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

  // Back-pressure (back_pressure.hpp): with a shard capacity every message takes a slot of its
  // shard's credit first; tell and try_tell are refused without one, send waits for one.
  void enqueue(troupe::detail::envelope_base* e) noexcept override { (void)admit(e, nullptr); }
  std::error_code try_enqueue(troupe::detail::envelope_base* e) noexcept override {
    return admit(e, nullptr);
  }
  void enqueue_or_wait(troupe::detail::envelope_base* e,
                       std::function<void(std::error_code)> done) noexcept override {
    (void)admit(e, &done);
  }

 private:
  /// Sends `e` counted once its shard has a slot; without a capacity, or for what only the
  /// region can judge (another type, an id or shard not readable here), as before.
  std::error_code admit(troupe::detail::envelope_base* e,
                        std::function<void(std::error_code)>* done) noexcept {
    shard_credit* credit = nullptr;
    shard_id shard = 0;
    if (setup_->credits && e->kind == troupe::detail::envelope_kind::user &&
        e->type() == typeid(M)) {
      credit = credit_of(*static_cast<const M*>(e->payload()), shard);
    }
    if (credit == nullptr) {
      forward(e);
      if (done != nullptr) (*done)({});
      return {};
    }
    const troupe::detail::intrusive_ptr<shard_credit> hold(credit);
    try {
      if (done == nullptr) {
        if (!credit->try_acquire()) return refuse(e, shard);
        send_counted(e, hold);
        return {};
      }
      shard_credit::waiter w{e,
                             [self = troupe::detail::intrusive_ptr<region_ingress>(this), hold](
                                 troupe::detail::envelope_base* m) { self->send_counted(m, hold); },
                             std::move(*done)};
      if (credit->acquire_or_queue(std::move(w))) {
        send_counted(e, hold);
        w.done({});
      }
      return {};
    } catch (...) {  // out of memory for the waiter
      const std::error_code ec = refuse(e, shard);
      if (done != nullptr && *done) (*done)(ec);
      return ec;
    }
  }

  /// The credit of the message's shard; null when the id or shard cannot be read here.
  shard_credit* credit_of(const M& message, shard_id& shard) noexcept {
    try {
      std::string id = entity_id_                  ? *entity_id_
                       : setup_->extract_entity_id ? setup_->extract_entity_id(message)
                                                   : std::string();
      if (id.empty()) return nullptr;
      shard = setup_->extract_shard_id ? setup_->extract_shard_id(id)
                                       : shard_of(id, setup_->settings.num_shards);
      return setup_->credits->at(shard);
    } catch (...) {
      return nullptr;  // the region calls the extractor again and handles what it throws
    }
  }

  /// Sends `e` (of M) in a counted envelope holding one slot of `credit`, taken already.
  void send_counted(troupe::detail::envelope_base* e,
                    const troupe::detail::intrusive_ptr<shard_credit>& credit) noexcept {
    counted_envelope<M>* c = nullptr;
    try {
      c = new counted_envelope<M>(std::move(*static_cast<M*>(e->payload())),
                                  entity_id_.value_or(std::string()), credit);
    } catch (...) {
      credit->give_back();
      forward(e);
      return;
    }
    c->sender = std::move(e->sender);
    delete e;
    std::unique_ptr<troupe::detail::envelope_base> held(c);
    try {
      if (!send_along_route(c->value, held)) forward(held.release());  // the region says why
    } catch (...) {
      if (held) dead_letter_copy_failed(std::move(held), c->value);
    }
  }

  /// Hands `e` to the region, which dead-letters it: its shard has no slot.
  std::error_code refuse(troupe::detail::envelope_base* e, shard_id shard) noexcept {
    std::unique_ptr<troupe::detail::envelope_base> held(e);
    M& message = *static_cast<M*>(held->payload());
    try {
      auto* r = new region_envelope(std::in_place_type<route_full<M>>, shard, std::move(message),
                                    /*over_capacity=*/true);
      replace_to_region(held, r);
    } catch (...) {
      dead_letter_copy_failed(std::move(held), message);
    }
    return make_error_code(errc::mailbox_full);
  }

  /// Dead-letters `message`, still in `held`'s envelope, which could not be moved on.
  void dead_letter_copy_failed(std::unique_ptr<troupe::detail::envelope_base> held,
                               M& message) noexcept {
    dead_letter_in_place(troupe::detail::dead_letters_of(*owner()), std::move(held), message,
                         path(), errc::message_copy_failed,
                         "region " + setup_->settings.type_name + ": " + copy_failure_reason());
  }

  using shard_envelope = troupe::detail::envelope<shard_message<M>>;
  using region_envelope = troupe::detail::envelope<region_message<M>>;

  // The sender's envelope goes on as it is when the shard can read the id from the message
  // itself (a region ref: the extractor): no copy and no allocation on the way to the entity.
  // `held` owns whichever envelope holds the message at each step: a message that cannot be
  // moved on (its copy or move constructor throws) becomes a dead letter from there.
  void forward(troupe::detail::envelope_base* e) noexcept override {
    std::unique_ptr<troupe::detail::envelope_base> held(e);
    M* message = nullptr;
    try {
      const bool direct = setup_->routes->direct();
      if (held->kind == troupe::detail::envelope_kind::user && held->type() == typeid(M)) {
        message = static_cast<M*>(held->payload());
      } else {
        auto converted = troupe::detail::convert_payload<M>(*held);
        if (!converted) {
          region().target()->enqueue_any(held.release());  // the region dead-letters it
          return;
        }
        auto* own = new troupe::detail::envelope<M>(std::move(*converted));
        own->sender = std::move(held->sender);
        held.reset(own);
        message = &own->value;
      }
      if (direct && send_along_route(*message, held)) return;
      // To the region as it came: it extracts again and rejects with the reason.
      auto* wrapped = entity_id_ ? new region_envelope(std::in_place_type<routed<M>>, *entity_id_,
                                                       std::move(*message))
                                 : new region_envelope(std::in_place_index<0>, std::move(*message));
      replace_to_region(held, wrapped);
    } catch (...) {
      if (held && message != nullptr) {
        dead_letter_copy_failed(std::move(held), *message);
      } else if (held) {
        troupe::detail::dead_letters_of(*owner()).publish(
            held.release(), path(), make_error_code(errc::message_copy_failed),
            "region " + setup_->settings.type_name + ": " + copy_failure_reason());
      }
      // Else the message is on its way already (what failed was telling the region to start
      // the shard: out of memory).
    }
  }

  /// Sends `message` (in `held`'s envelope) along its shard's route: into the shard actor's
  /// mailbox when the route is open, else held in the route until the region has started the
  /// actor. Takes the envelope and returns true, unless the id or shard cannot be read here
  /// (the region then rejects the message, saying why), the shard has no route, or the region
  /// is gone. Throws when the message cannot be moved; `held` then owns the envelope that holds
  /// it.
  bool send_along_route(M& message, std::unique_ptr<troupe::detail::envelope_base>& held) {
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
    } catch (...) {
      return false;  // the region calls the extractor again and handles what it throws
    }
    if (route == nullptr) return false;
    // The shard reads the id from a message in its own envelope (a region ref); else it needs a
    // delivery. Built before the lock: a constructor that throws leaves the message where it was.
    // A counted envelope (back_pressure.hpp) carries its id and goes on as it is.
    if (entity_id_ && !is_counted(*held)) {
      held.reset(delivery(std::move(id), message, *held, time_point{}));
    }
    bool ask_start = false;
    bool closed = false;
    std::optional<send_failure> unsent;  // why the shard's remote home could not have it
    {
      std::lock_guard lock(route->lock);
      switch (route->state) {
        case route_state::open:
          if ((++route->sampled & 15U) == 0) stamp(held, id);  // for the queue-wait figure
          route->deliver_locked(held.release());
          return true;
        case route_state::remote:
          try {
            route->remote->send(held->type() == typeid(M) ? id : delivered_id(*held),
                                &payload_of(*held), held);  // takes it on its way
            return true;
          } catch (...) {
            unsent = current_send_failure(route->remote_home.node);
          }
          break;
        case route_state::idle:
          route->state = route_state::starting;
          ask_start = true;
          route->hold_locked(held.release());
          break;
        case route_state::starting:
        case route_state::stopping:
          if (route->held < setup_->settings.buffer_size) route->hold_locked(held.release());
          break;
        case route_state::closed:
          closed = true;
          break;
      }
    }
    if (unsent) {
      M& payload = payload_of(*held);
      dead_letter_in_place(troupe::detail::dead_letters_of(*owner()), std::move(held), payload,
                           path(), unsent->code,
                           "region " + setup_->settings.type_name + ": " + unsent->why);
    } else if (ask_start) {
      tell_region(start_shard{shard});
    } else if (held) {  // the route is full (the region rejects it) or the region is gone
      M& payload = payload_of(*held);
      auto* r = closed ? new region_envelope(std::in_place_index<0>, std::move(payload))
                       : new region_envelope(std::in_place_type<route_full<M>>, shard,
                                             std::move(payload));
      replace_to_region(held, r);
    }
    return true;
  }

  /// Turns the sender's envelope into a delivery that carries its send time (1 in 16).
  void stamp(std::unique_ptr<troupe::detail::envelope_base>& out, std::string& id) {
    if (setup_->credits) return;  // a counted envelope goes on as it is: no sample
    const time_point now = setup_->routes->clock().now();
    if (out->type() == typeid(M)) {
      // The message moves into the delivery: if that throws, it goes on unstamped.
      try {
        out.reset(delivery(std::move(id), payload_of(*out), *out, now));
      } catch (...) {
      }
    } else {
      std::get<deliver<M>>(static_cast<shard_envelope&>(*out).value).sent_at = now;
    }
  }

  [[nodiscard]] bool is_counted(troupe::detail::envelope_base& e) const noexcept {
    return setup_->credits && dynamic_cast<counted_envelope<M>*>(&e) != nullptr;
  }

  /// The entity id a delivery carries.
  static const std::string& delivered_id(troupe::detail::envelope_base& e) {
    return std::get<deliver<M>>(static_cast<shard_envelope&>(e).value).entity_id;
  }

  /// The message in `e`: the sender's own envelope of M, or a delivery.
  static M& payload_of(troupe::detail::envelope_base& e) {
    if (e.type() == typeid(M)) return *static_cast<M*>(e.payload());
    return std::get<deliver<M>>(static_cast<shard_envelope&>(e).value).message;
  }

  /// A delivery of `message` (moved out of `e`) to entity `id`, with `e`'s sender; `e` keeps
  /// the message when this throws.
  static shard_envelope* delivery(std::string id, M& message, troupe::detail::envelope_base& e,
                                  time_point sent_at) {
    auto* d = new shard_envelope(std::in_place_type<deliver<M>>, std::move(id), std::move(message),
                                 sent_at);
    d->sender = std::move(e.sender);
    return d;
  }

  template <class T>
  void tell_region(T message) {
    region().target()->enqueue(new region_envelope(std::in_place_type<T>, std::move(message)));
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
    std::unique_ptr<troupe::detail::envelope_base> held(e);
    try {
      auto query =
          troupe::detail::convert_payload<std::variant<get_entity_ids, get_shard_stats>>(*held);
      if (!query) {
        region().target()->enqueue_any(held.release());  // the region dead-letters it
        return;
      }
      replace_to_region(
          held, new troupe::detail::envelope<region_message<M>>(
                    std::in_place_type<shard_query>, shard_query{shard_, std::move(*query)}));
    } catch (...) {
      // Out of memory: the query is lost, and its asker times out.
    }
  }

  shard_id shard_;
};

}  // namespace troupe::sharding::detail
