#pragma once
/// The entry point of sharding: one memoised instance per actor system
/// (cluster_sharding::get(system)), which starts sharded types and hands out refs to entities.
///
///     auto& sharding = troupe::sharding::cluster_sharding::get(system);
///     auto carts = sharding.start<cart_entity>();             // cart_entity::shard declares it
///     carts.tell(add_item{.cart = "user-42", .sku = "book-1"});
///     auto cart = sharding.entity_ref_for<cart_entity>("user-42");

#include <troupe/core/actor_system.hpp>
#include <troupe/sharding/detail/envelope_ingress.hpp>
#include <troupe/sharding/detail/region_actor.hpp>
#include <troupe/sharding/detail/region_ingress.hpp>
#include <troupe/sharding/messages.hpp>
#include <troupe/sharding/placement.hpp>
#include <troupe/sharding/remembered_entities.hpp>
#include <troupe/sharding/shard_ref.hpp>
#include <troupe/sharding/sharding_options.hpp>

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>

namespace troupe::sharding {

namespace detail {

/// Resolves every knob: code, then the node's configuration, then the defaults.
region_settings resolve_settings(actor_system& system, const std::string& type_name,
                                 std::optional<std::uint32_t> num_shards,
                                 std::optional<duration> passivation_idle,
                                 std::optional<duration> shard_passivation_idle,
                                 std::optional<std::size_t> max_entities, std::optional<bool> proxy,
                                 std::optional<bool> remember_entities,
                                 std::optional<std::string> role, const entity_options& entity = {},
                                 std::optional<std::size_t> shard_capacity = std::nullopt);

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

  /// Full form: every setting in the builder (type name, entity, extractor, ...). Returns the
  /// region's ref, which takes In (M unless the options say otherwise).
  template <class M, class In>
  actor_ref<In> start(sharding_options<M, In> options);

  /// Class shorthand: type name + entity class E (+ constructor arguments, kept and copied for
  /// each incarnation) + options holding at least the extractor.
  template <class E, class In, class... Args>
  actor_ref<In> start(std::string type_name, sharding_options<typename E::message_type, In> options,
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
    return ingress<M>(region_of(type_name, typeid(M)), std::move(entity_id));
  }
  template <class M>
  actor_ref<M> entity_ref_for(const shard_key<M>& key, std::string entity_id) {
    return entity_ref_for<M>(key.type_name, std::move(entity_id));
  }
  template <class E>
  actor_ref<typename E::message_type> entity_ref_for(std::string entity_id) {
    return entity_ref_for(E::shard, std::move(entity_id));
  }

  /// The region of a started type, as users send to it: T is the type the region's ref takes
  /// (sharding_options' In), or the entities' M.
  template <class T>
  actor_ref<T> region_for(const std::string& type_name) {
    if (untyped_ref in = input_ref(type_name, typeid(T))) return actor_ref<T>(in.target_ptr());
    return ingress<T>(region_of(type_name, typeid(T)), std::nullopt);
  }

  /// A ref to one shard of a type on this node, valid across the shard's passivation: ask it
  /// get_entity_ids (std::vector<std::string>) or get_shard_stats (shard_stats). A shard that
  /// is not running answers as an empty one; asking does not start it.
  untyped_ref shard_ref_for(const std::string& type_name, shard_id shard);
  /// The same shard as a typed handle: `co_await sharding.shard("cart", 7).entity_ids(1s)`.
  shard_ref shard(const std::string& type_name, shard_id id) {
    return {shard_ref_for(type_name, id), id};
  }
  /// The same, naming the type by its entity class (E::shard).
  template <class E>
  shard_ref shard(shard_id id) {
    return this->shard(E::shard.type_name, id);
  }

  // -- introspection (blocking; for tools and tests, not for actors) --------------------------
  /// The shards of a type on this node, by id, with each running shard's own figures.
  std::vector<shard_info> shards(const std::string& type_name,
                                 duration timeout = std::chrono::seconds(3));
  /// The region's state: shards, buffered messages, hottest entity ids.
  region_state state(const std::string& type_name, duration timeout = std::chrono::seconds(3));
  /// The region's state as the region alone knows it (no shard's figures or hot ids), without
  /// blocking: `done` gets it or the failure once, on whichever thread the answer comes. For
  /// the runtime's own waiting, such as a graceful leave's (not an introspection call).
  void region_state_async(const std::string& type_name, duration timeout,
                          std::function<void(std::exception_ptr, region_state)> done);
  /// The ids of the entities running in one shard.
  std::vector<std::string> entity_ids(const std::string& type_name, shard_id shard,
                                      duration timeout = std::chrono::seconds(3));
  /// Names of the started types.
  std::vector<std::string> type_names() const;
  /// The shard of entity `entity_id` of a started type, as its region computes it (the type's
  /// own shard extractor, or the id's hash). Throws troupe::error for a type not started
  /// here, or what the type's extractor throws.
  shard_id shard_for(const std::string& type_name, const std::string& entity_id) const;

  // -- the placement seam (the cluster layer sets it; tests may) -------------------------------
  /// Makes the placement of each type started from now on (types started before keep theirs),
  /// given its settings and its entities' message type: the cluster answers with allocations
  /// (and throws when that type cannot cross nodes); without a factory every shard lives here.
  using placement_factory = std::function<std::shared_ptr<placement>(
      const region_settings&, const std::type_info& message_type)>;
  void set_placement_factory(placement_factory factory);

  /// Makes the store each type with remember-entities keeps its ids in (types started before
  /// keep theirs). The persistence layer's remember_entities_in_plugins sets it, and so does
  /// joining a cluster; a type that remembers its entities cannot start without one.
  using remembered_entities_factory =
      std::function<std::shared_ptr<remembered_entities>(const region_settings&)>;
  void set_remembered_entities_factory(remembered_entities_factory factory);

 private:
  /// The new type's placement: the factory's, or single_node_placement.
  std::shared_ptr<placement> make_placement(const region_settings& settings,
                                            const std::type_info& message_type);
  /// The type's remembered-entities store: null unless it remembers them; throws
  /// errc::invalid_config when it does and no factory is set.
  std::shared_ptr<remembered_entities> make_memory(const region_settings& settings);

  /// A started region as its refs need it.
  struct region_handle {
    untyped_ref region;                 // the region actor itself (message type: region_message<M>)
    std::shared_ptr<const void> setup;  // its region_setup<M> (with the shards' routes)
  };
  struct started_type {
    region_handle handle;
    const std::type_info* message_type;
    std::function<untyped_ref(shard_id)> shard_ref;  // builds a shard_ingress<M>
    const std::type_info* input_type = nullptr;      // In, when it is not M
    untyped_ref input;                               // the region's ref for In
    std::function<shard_id(const std::string&)> shard_of_id;
    std::uint32_t num_shards = 0;
  };

  template <class M>
  static actor_ref<M> ingress(region_handle handle, std::optional<std::string> entity_id) {
    return actor_ref<M>(troupe::detail::intrusive_ptr<troupe::detail::actor_target>(
        new detail::region_ingress<M>(
            std::move(handle.region),
            std::static_pointer_cast<const detail::region_setup<M>>(std::move(handle.setup)),
            std::move(entity_id)),
        troupe::detail::adopt));
  }

  region_handle region_of(const std::string& type_name, const std::type_info& message_type) const;
  /// The region's ref for a type started with In other than M, when `input_type` is In.
  untyped_ref input_ref(const std::string& type_name, const std::type_info& input_type) const;
  void set_input_ref(const std::string& type_name, const std::type_info& input_type,
                     untyped_ref ref);
  [[nodiscard]] const started_type& started(const std::string& type_name) const;
  untyped_ref register_type(const std::string& type_name, const std::type_info& message_type,
                            std::shared_ptr<const void> setup,
                            const std::function<untyped_ref(actor_context&)>& spawn_region,
                            std::function<untyped_ref(shard_id)> (*make_shard_ref)(untyped_ref),
                            std::function<shard_id(const std::string&)> extract_shard_id,
                            std::uint32_t num_shards);

  actor_system& system_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, started_type> types_;
  untyped_ref sharding_guardian_;                   // /system/cluster/sharding
  placement_factory placement_factory_;             // guarded by mutex_
  remembered_entities_factory remembered_factory_;  // guarded by mutex_
};

template <class M, class In>
actor_ref<In> cluster_sharding::start(sharding_options<M, In> options) {
  constexpr bool same_type = std::is_same_v<M, In>;
  if constexpr (is_sharding_envelope<In>::value) {
    static_assert(std::is_same_v<In, sharding_envelope<M>>,
                  "a region taking sharding_envelope<X> must have entities of type X");
    if (!options.extract_entity_id) {
      options.with_extract_entity_id([](const In& e) { return e.entity_id; });
    }
    if (!options.extract_entity_message) {
      options.with_extract_entity_message([](In e) { return std::move(e.message); });
    }
  }
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
  if (!same_type && !options.extract_entity_message) {
    throw error(errc::invalid_config,
                "sharding: type '" + options.type_name +
                    "' takes another type than its entities and needs an entity-message extractor");
  }
  auto setup = std::make_shared<detail::region_setup<M>>();
  setup->settings = detail::resolve_settings(
      system_, options.type_name, options.num_shards, options.passivation_idle,
      options.shard_passivation_idle, options.max_entities, options.proxy,
      options.remember_entities, options.role, options.entity, options.shard_capacity);
  setup->spawn_entity = std::move(options.spawn_entity);
  if (setup->spawn_entity && setup->settings.entity_mailbox.capacity > 0) {
    // The entity's mailbox goes into the spawn options the shard builds.
    setup->spawn_entity = [spawn = std::move(setup->spawn_entity),
                           mailbox = setup->settings.entity_mailbox](actor_context& shard,
                                                                     spawn_options&& o) {
      o.with_mailbox(mailbox);
      return spawn(shard, std::move(o));
    };
  }
  auto envelope = std::make_shared<detail::envelope_setup<M, In>>();
  if constexpr (same_type) {
    setup->extract_entity_id = std::move(options.extract_entity_id);
    setup->extract_entity_message = std::move(options.extract_entity_message);
  } else {
    // The region and its shards stay keyed on M: the ref for In hands them (id, M) pairs.
    envelope->extract_entity_id = std::move(options.extract_entity_id);
    envelope->extract_entity_message = std::move(options.extract_entity_message);
    envelope->type_name = options.type_name;
    envelope->dead_letters = &system_.dead_letters();
  }
  setup->extract_shard_id = std::move(options.extract_shard_id);
  if (options.max_concurrent > 0) {
    setup->gate = std::make_shared<concurrency_gate>(options.max_concurrent);
  }
  if (setup->settings.shard_capacity > 0) {
    if (setup->settings.max_entities > 0) {
      throw error(errc::invalid_config,
                  "sharding: type '" + options.type_name +
                      "': shard-capacity (back-pressure) cannot be combined with max-entities");
    }
    setup->credits = std::make_shared<detail::credit_table>(setup->settings.num_shards,
                                                            setup->settings.shard_capacity);
  }
  if (options.keep_alive && !setup->settings.proxy) {
    setup->keep_alive = std::move(options.keep_alive);
    setup->keep_alive_interval = options.keep_alive_interval;
  }
  setup->memory = make_memory(setup->settings);
  if (setup->memory) {
    setup->budget =
        std::make_shared<start_budget>(static_cast<double>(setup->settings.remember_start_rate));
  }
  setup->homes = make_placement(setup->settings, typeid(M));
  // With an LRU limit the region sees every message (it keeps the order of use).
  setup->routes = std::make_shared<detail::shard_routes<M>>(
      setup->settings.num_shards, setup->settings.max_entities == 0, system_.clock());
  const std::string type_name = setup->settings.type_name;
  untyped_ref region = register_type(
      type_name, typeid(M), setup,
      [&](actor_context& guardian) -> untyped_ref {
        return guardian.spawn<detail::region_actor<M>>(
            region_name(type_name), std::shared_ptr<const detail::region_setup<M>>(setup));
      },
      [](untyped_ref r) -> std::function<untyped_ref(shard_id)> {
        return [r = std::move(r)](shard_id shard) {
          return untyped_ref(troupe::detail::intrusive_ptr<troupe::detail::actor_target>(
              new detail::shard_ingress<M>(r, shard), troupe::detail::adopt));
        };
      },
      setup->extract_shard_id, setup->settings.num_shards);
  if constexpr (same_type) {
    return ingress<M>(region_handle{std::move(region), std::move(setup)}, std::nullopt);
  } else {
    actor_ref<In> ref(troupe::detail::intrusive_ptr<troupe::detail::actor_target>(
        new detail::envelope_ingress<M, In>(std::move(region), std::move(envelope)),
        troupe::detail::adopt));
    set_input_ref(type_name, typeid(In), ref);
    return ref;
  }
}

}  // namespace troupe::sharding
