#pragma once
/// The entry point of sharding: one memoised instance per actor system
/// (cluster_sharding::get(system)), which starts sharded types and hands out refs to entities.
///
///     auto& sharding = troupe::sharding::cluster_sharding::get(system);
///     auto carts = sharding.start<cart_entity>();             // cart_entity::shard declares it
///     carts.tell(add_item{.cart = "user-42", .sku = "book-1"});
///     auto cart = sharding.entity_ref_for<cart_entity>("user-42");

#include <troupe/core/actor_system.hpp>
#include <troupe/sharding/detail/region_actor.hpp>
#include <troupe/sharding/messages.hpp>
#include <troupe/sharding/sharding_options.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>

namespace troupe::sharding {

namespace detail {

/// The ref users hold for a region (or for one entity): wraps each message of type M into the
/// region's own message type, so region and entity refs are plain actor_ref<M>.
template <class M>
class region_ingress final : public troupe::detail::actor_target {
 public:
  region_ingress(untyped_ref region, std::optional<std::string> entity_id)
      : region_(std::move(region)), entity_id_(std::move(entity_id)) {}

  void enqueue(troupe::detail::envelope_base* e) noexcept override { forward(e); }
  void enqueue_any(troupe::detail::envelope_base* e) noexcept override { forward(e); }
  std::error_code try_enqueue(troupe::detail::envelope_base* e) noexcept override {
    forward(e);
    return {};
  }
  void send_system(troupe::detail::system_message* m) noexcept override {
    region_.target()->send_system(m);
  }
  [[nodiscard]] std::string path() const override {
    return entity_id_ ? region_.path() + "#" + *entity_id_ : region_.path();
  }
  [[nodiscard]] troupe::detail::system_impl* owner() const noexcept override {
    return region_.target()->owner();
  }
  [[nodiscard]] bool is_terminated() const noexcept override { return region_.is_terminated(); }
  void notify_undelivered(std::error_code, const std::string&) noexcept override {}

 private:
  void forward(troupe::detail::envelope_base* e) noexcept {
    try {
      auto message = troupe::detail::convert_payload<M>(*e);
      if (!message) {
        region_.target()->enqueue_any(e);  // the region dead-letters what it cannot take
        return;
      }
      troupe::detail::envelope_base* wrapped;
      if (entity_id_) {
        wrapped = new troupe::detail::envelope<region_message<M>>(
            std::in_place_type<routed<M>>, routed<M>{*entity_id_, std::move(*message)});
      } else {
        wrapped = new troupe::detail::envelope<region_message<M>>(std::in_place_index<0>,
                                                                  std::move(*message));
      }
      wrapped->sender = std::move(e->sender);
      delete e;
      region_.target()->enqueue(wrapped);
    } catch (...) {
      delete e;  // out of memory: nothing sensible left to do
    }
  }

  untyped_ref region_;
  std::optional<std::string> entity_id_;
};

/// The ref users hold for one shard (shard_ref_for): takes get_entity_ids and get_shard_stats
/// and sends them through the region, so that it outlives the shard actor's passivation.
template <class M>
class shard_ingress final : public troupe::detail::actor_target {
 public:
  shard_ingress(untyped_ref region, shard_id shard) : region_(std::move(region)), shard_(shard) {}

  void enqueue(troupe::detail::envelope_base* e) noexcept override { forward(e); }
  void enqueue_any(troupe::detail::envelope_base* e) noexcept override { forward(e); }
  std::error_code try_enqueue(troupe::detail::envelope_base* e) noexcept override {
    forward(e);
    return {};
  }
  void send_system(troupe::detail::system_message* m) noexcept override {
    region_.target()->send_system(m);
  }
  [[nodiscard]] std::string path() const override {
    return region_.path() + "/" + shard_child_name(shard_);
  }
  [[nodiscard]] troupe::detail::system_impl* owner() const noexcept override {
    return region_.target()->owner();
  }
  [[nodiscard]] bool is_terminated() const noexcept override { return region_.is_terminated(); }
  void notify_undelivered(std::error_code, const std::string&) noexcept override {}

 private:
  void forward(troupe::detail::envelope_base* e) noexcept {
    try {
      auto query =
          troupe::detail::convert_payload<std::variant<get_entity_ids, get_shard_stats>>(*e);
      if (!query) {
        region_.target()->enqueue_any(e);  // the region dead-letters what it cannot take
        return;
      }
      auto* wrapped = new troupe::detail::envelope<region_message<M>>(
          std::in_place_type<shard_query>, shard_query{shard_, std::move(*query)});
      wrapped->sender = std::move(e->sender);
      delete e;
      region_.target()->enqueue(wrapped);
    } catch (...) {
      delete e;  // out of memory: nothing sensible left to do
    }
  }

  untyped_ref region_;
  shard_id shard_;
};

/// Resolves every knob: code, then the node's configuration, then the defaults.
region_settings resolve_settings(actor_system& system, const std::string& type_name,
                                 std::optional<std::uint32_t> num_shards,
                                 std::optional<duration> passivation_idle,
                                 std::optional<duration> shard_passivation_idle,
                                 std::optional<std::size_t> max_entities, std::optional<bool> proxy,
                                 std::optional<bool> remember_entities,
                                 std::optional<std::string> role);

}  // namespace detail

class cluster_sharding {
 public:
  /// Created by the actor system on first use (see get()).
  explicit cluster_sharding(actor_system& system);
  ~cluster_sharding();
  cluster_sharding(const cluster_sharding&) = delete;
  cluster_sharding& operator=(const cluster_sharding&) = delete;

  /// The system's sharding: every call returns the same instance.
  static cluster_sharding& get(actor_system& system) {
    return system.extension<cluster_sharding>();
  }

  /// Full form: every setting in the builder (type name, entity, extractor, ...).
  template <class M>
  actor_ref<M> start(sharding_options<M> options);

  /// Class shorthand: type name + entity class E (+ constructor arguments, kept and copied for
  /// each incarnation) + options holding at least the extractor.
  template <class E, class... Args>
  actor_ref<typename E::message_type> start(std::string type_name,
                                            sharding_options<typename E::message_type> options,
                                            Args... args) {
    options.with_type_name(std::move(type_name));
    options.template with_entity<E>(std::move(args)...);
    return start(std::move(options));
  }

  /// Shortest form: E declares `static inline const shard_key<M> shard = ...` (type name and
  /// extractor); an extractor in `options` overrides the key's.
  template <class E>
  actor_ref<typename E::message_type> start(
      sharding_options<typename E::message_type> options = {}) {
    const auto& key = E::shard;
    if (!options.extract_entity_id) options.with_extract_entity_id(key.extract_entity_id);
    return start<E>(key.type_name, std::move(options));
  }

  /// A ref to one entity: tell and ask go to it, wherever it lives, without an extractor.
  template <class M>
  actor_ref<M> entity_ref_for(const std::string& type_name, std::string entity_id) {
    return actor_ref<M>(troupe::detail::intrusive_ptr<troupe::detail::actor_target>(
        new detail::region_ingress<M>(region_of(type_name, typeid(M)), std::move(entity_id)),
        troupe::detail::adopt));
  }
  template <class M>
  actor_ref<M> entity_ref_for(const shard_key<M>& key, std::string entity_id) {
    return entity_ref_for<M>(key.type_name, std::move(entity_id));
  }
  template <class E>
  actor_ref<typename E::message_type> entity_ref_for(std::string entity_id) {
    return entity_ref_for(E::shard, std::move(entity_id));
  }

  /// The region of a started type, as users send to it.
  template <class M>
  actor_ref<M> region_for(const std::string& type_name) {
    return actor_ref<M>(troupe::detail::intrusive_ptr<troupe::detail::actor_target>(
        new detail::region_ingress<M>(region_of(type_name, typeid(M)), std::nullopt),
        troupe::detail::adopt));
  }

  /// A ref to one shard of a type on this node, valid across the shard's passivation: ask it
  /// get_entity_ids (std::vector<std::string>) or get_shard_stats (shard_stats). A shard that
  /// is not running answers as an empty one; asking does not start it.
  untyped_ref shard_ref_for(const std::string& type_name, shard_id shard);

  // -- introspection (blocking; for tools and tests, not for actors) --------------------------
  /// The shards of a type on this node, by id, with each running shard's own figures.
  std::vector<shard_info> shards(const std::string& type_name,
                                 duration timeout = std::chrono::seconds(3));
  /// The region's state: shards, buffered messages, hottest entity ids.
  region_state state(const std::string& type_name, duration timeout = std::chrono::seconds(3));
  /// The ids of the entities running in one shard.
  std::vector<std::string> entity_ids(const std::string& type_name, shard_id shard,
                                      duration timeout = std::chrono::seconds(3));
  /// Names of the started types.
  std::vector<std::string> type_names() const;

 private:
  struct started_type {
    untyped_ref region;  // the region actor itself (message type: region_message<M>)
    const std::type_info* message_type;
    std::function<untyped_ref(shard_id)> shard_ref;  // builds a shard_ingress<M>
  };

  untyped_ref region_of(const std::string& type_name, const std::type_info& message_type) const;
  [[nodiscard]] const started_type& started(const std::string& type_name) const;
  untyped_ref register_type(const std::string& type_name, const std::type_info& message_type,
                            const std::function<untyped_ref(actor_context&)>& spawn_region,
                            std::function<untyped_ref(shard_id)> (*make_shard_ref)(untyped_ref));

  actor_system& system_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, started_type> types_;
  untyped_ref sharding_guardian_;  // /system/cluster/sharding
};

template <class M>
actor_ref<M> cluster_sharding::start(sharding_options<M> options) {
  if (options.type_name.empty()) {
    throw error(errc::invalid_config, "sharding: a type needs a type name");
  }
  if (!options.spawn_entity && !options.proxy.value_or(false)) {
    throw error(errc::invalid_config,
                "sharding: type '" + options.type_name + "' needs an entity (with_entity<E>())");
  }
  if (!options.extract_entity_id) {
    throw error(errc::invalid_config,
                "sharding: type '" + options.type_name + "' needs an entity-id extractor");
  }
  auto setup = std::make_shared<detail::region_setup<M>>();
  setup->settings = detail::resolve_settings(
      system_, options.type_name, options.num_shards, options.passivation_idle,
      options.shard_passivation_idle, options.max_entities, options.proxy,
      options.remember_entities, options.role);
  setup->spawn_entity = std::move(options.spawn_entity);
  setup->extract_entity_id = std::move(options.extract_entity_id);
  setup->extract_entity_message = std::move(options.extract_entity_message);
  setup->extract_shard_id = std::move(options.extract_shard_id);
  if (options.max_concurrent > 0) {
    setup->gate = std::make_shared<concurrency_gate>(options.max_concurrent);
  }
  const std::string type_name = setup->settings.type_name;
  untyped_ref region = register_type(
      type_name, typeid(M),
      [&](actor_context& guardian) -> untyped_ref {
        return guardian.spawn<detail::region_actor<M>>(
            region_name(type_name), std::shared_ptr<const detail::region_setup<M>>(setup));
      },
      [](untyped_ref r) -> std::function<untyped_ref(shard_id)> {
        return [r = std::move(r)](shard_id shard) {
          return untyped_ref(troupe::detail::intrusive_ptr<troupe::detail::actor_target>(
              new detail::shard_ingress<M>(r, shard), troupe::detail::adopt));
        };
      });
  return actor_ref<M>(troupe::detail::intrusive_ptr<troupe::detail::actor_target>(
      new detail::region_ingress<M>(std::move(region), std::nullopt), troupe::detail::adopt));
}

}  // namespace troupe::sharding
