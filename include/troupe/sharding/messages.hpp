#pragma once
/// What entities say to their shard, and what travels between region and shard.

#include <troupe/core/actor.hpp>
#include <troupe/core/actor_ref.hpp>
#include <troupe/sharding/shard_id.hpp>
#include <troupe/sharding/shard_stats.hpp>

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace troupe::sharding {

/// Sent by an entity to its parent shard to be passivated: the shard sends `stop_message` back
/// (a poison_pill stops it at once, or a message of its own type so that it can finish first)
/// and buffers whatever arrives for it meanwhile, for its next incarnation.
template <class M>
struct passivate {
  std::variant<poison_pill, M> stop_message = poison_pill{};
  /// The entity asking (request_passivation fills it in).
  untyped_ref entity;
};

/// Asks the entity's shard to passivate it (call from inside the entity). The long form: the
/// typed one below deduces M.
template <class M>
void request_passivation(actor_context& context,
                         std::variant<poison_pill, M> stop_message = poison_pill{}) {
  context.parent().tell_any(passivate<M>{std::move(stop_message), context.self_ref()});
}

namespace detail {
/// The entity cell behind `self`; throws errc::not_an_entity for anything else.
troupe::detail::actor_cell& entity_cell_of(const untyped_ref& self);
}  // namespace detail

/// Asks the entity's shard to passivate it, M deduced from the entity's own ref (call from
/// inside the entity: `request_passivation(self())`). The shard sends it a poison pill.
template <class M>
void request_passivation(const actor_ref<M>& self) {
  troupe::detail::actor_cell& cell = detail::entity_cell_of(self);
  untyped_ref(troupe::detail::intrusive_ptr<troupe::detail::actor_target>(cell.parent()))
      .tell_any(passivate<M>{poison_pill{}, self});
}

/// As above, with a stop message of the entity's own type (or one alternative of it, e.g.
/// `request_passivation(self(), stop_cart{})`): the shard sends it back to the entity, which
/// stops itself when it has finished; what arrives meanwhile waits for the next incarnation.
template <class M, class S>
requires std::constructible_from<M, S>
void request_passivation(const actor_ref<M>& self, S&& stop_message) {
  troupe::detail::actor_cell& cell = detail::entity_cell_of(self);
  untyped_ref(troupe::detail::intrusive_ptr<troupe::detail::actor_target>(cell.parent()))
      .tell_any(passivate<M>{
          std::variant<poison_pill, M>(std::in_place_type<M>, std::forward<S>(stop_message)),
          self});
}

/// Why a shard began to passivate an entity (troupe_passivations_total's `cause`).
enum class passivation_cause : std::uint8_t {
  /// It got no message for `passivation-idle`.
  idle,
  /// It was the least recently used beyond `max-entities`.
  max_entities,
  /// The entity asked for it (request_passivation).
  requested,
  /// Its shard stopped on this node: handed off or rebalanced, or its region or node stopping.
  shard_stopped,
};
inline constexpr std::size_t passivation_cause_count = 4;

/// "idle", "max_entities", "requested" or "shard_stopped".
[[nodiscard]] constexpr const char* to_string(passivation_cause cause) noexcept {
  switch (cause) {
    case passivation_cause::idle:
      return "idle";
    case passivation_cause::max_entities:
      return "max_entities";
    case passivation_cause::requested:
      return "requested";
    case passivation_cause::shard_stopped:
      return "shard_stopped";
  }
  return "unknown";
}

/// Passivations a region's shards began on this node, indexed by passivation_cause.
using passivation_counts = std::array<std::uint64_t, passivation_cause_count>;

/// One shard as introspection sees it.
struct shard_info {
  shard_id id = 0;
  /// Entities running in it (0 when not resident).
  std::size_t entity_count = 0;
  /// The shard actor is running (false: passivated or never started, still owned here).
  bool resident = false;
  /// The shard actor is stopping (its entities finish their mailboxes first).
  bool stopping = false;
  /// Hosted on this node.
  bool local = true;
  /// The node that hosts it as this node knows now (on one node without a cluster: empty, and
  /// local); empty and not local while it has no home yet (its messages wait here).
  std::string owner;
  /// The allocation that gave it this owner (its epoch; 0 without a cluster or a home).
  std::int64_t epoch = 0;
  /// Messages the region delivered to it, over all its incarnations.
  std::uint64_t messages_processed = 0;
  /// Entities started in it on this node (activations), over all its incarnations.
  std::uint64_t activations = 0;
  /// The current shard actor's own figures (all zero when not resident).
  shard_stats stats;
};

/// Ask a shard (shard_ref_for) for its ids: replies std::vector<std::string>.
struct get_entity_ids {};
/// Ask a shard (shard_ref_for) for its figures: replies shard_stats.
struct get_shard_stats {};

/// The state of a region.
struct region_state {
  std::string type_name;
  std::uint32_t num_shards = 0;
  std::vector<shard_info> shards;
  /// Messages waiting for a shard actor to start (held in its route, or in the region's buffer).
  std::size_t buffered = 0;
  /// With a shard capacity (back-pressure): messages sent and not yet handled by their entity,
  /// over all shards, and the most any one shard had at once (never above the capacity).
  std::size_t outstanding = 0;
  std::size_t outstanding_peak = 0;
  /// Hottest entity ids of the recent window, hottest first (merged from the running shards).
  std::vector<std::pair<std::string, std::uint64_t>> hottest;
  /// Passivations the region's shards began on this node since it started, by cause.
  passivation_counts passivations{};
  /// Messages refused (dead letters with errc::mailbox_full) because a buffer held
  /// `buffer-size` messages already: the region's (shards without a home, or stopping), a
  /// shard's route (shard starting), or a shard's (entity stopping). Since the region started.
  std::uint64_t buffer_overflows = 0;
};

namespace detail {

/// A message for one entity, its id already known.
template <class M>
struct routed {
  std::string entity_id;
  M message;
};

/// Sender to region: start this shard (its route holds messages for it; shard_routes.hpp).
struct start_shard {
  shard_id shard = 0;
};
/// Sender to region: a message the shard's route could not hold (it holds buffer-size already),
/// for the region to reject.
template <class M>
struct route_full {
  shard_id shard = 0;
  M message;
  /// Refused for want of a slot of the shard's credit (back_pressure.hpp), not a full route.
  bool over_capacity = false;
};

/// Region or sender to shard: deliver to an entity (spawning it if needed).
template <class M>
struct deliver {
  std::string entity_id;
  M message;
  /// When it was sent, for 1 in 16 messages (the shard's queue-wait sample); else unset.
  time_point sent_at{};
};
/// Region to shard: the policy wants this entity stopped.
struct passivate_entity {
  std::string entity_id;
  passivation_cause cause = passivation_cause::idle;
};
/// Region to shard: the shard no longer lives here. Every entity stops after what its mailbox
/// holds, then the shard stops.
struct stop_entities {};
/// Shard to region (with an LRU limit): an entity has stopped, or could not be started.
struct entity_stopped {
  shard_id shard = 0;
  std::string entity_id;
};
/// Shard to region (with an LRU limit): an incarnation of an entity has started. With the stop
/// reports, the region's policy tracks exactly the entities that run, even where a report
/// crosses a message the region sent.
struct entity_started {
  shard_id shard = 0;
  std::string entity_id;
};
/// Region's own periodic tick (with an LRU limit).
struct passivation_tick {};
/// Shard's own periodic tick: its hot-key window slides.
struct hot_keys_tick {};
/// Shard's own timer: has it stood empty for its window?
struct shard_idle_check {};
/// Shard's own periodic tick for idle entities (when the region keeps no LRU order).
struct entity_idle_tick {};
/// Shard to region: "I have stood empty for my window, having received `delivered` messages";
/// the region stops the shard only if it sent no more since (none is in flight).
struct shard_idle {
  shard_id shard = 0;
  std::uint64_t delivered = 0;
};
/// Asks a region for its state.
struct get_region_state {};

}  // namespace detail
}  // namespace troupe::sharding
