#pragma once
/// INTERNAL. Routing one message to its entity, on the sender's thread: read the id, hash it to
/// a shard, hand the message to the entity directory. Only starting an entity and passivating
/// for the LRU limit go to the region actor. Bad input (an empty id, a throwing extractor, a
/// shard out of range) becomes a dead letter with the reason, and nothing else is affected.

#include <troupe/core/dead_letters.hpp>
#include <troupe/core/detail/actor_target.hpp>
#include <troupe/core/detail/envelope.hpp>
#include <troupe/sharding/detail/region_setup.hpp>

#include <exception>
#include <string>
#include <utility>
#include <vector>

namespace troupe::sharding::detail {

/// Publishes `e` as a dead letter of `region`.
void reject_to_dead_letters(const untyped_ref& region, troupe::detail::envelope_base* e, errc code,
                            std::string reason) noexcept;

/// Routes `e` (owned) to entity `*id`, or to the entity its extractor names when `id` is null.
template <class M>
void route(const region_setup<M>& setup, const untyped_ref& region, troupe::detail::envelope<M>* e,
           const std::string* id) noexcept {
  const std::string& type = setup.settings.type_name;
  std::string extracted;
  shard_id shard = 0;
  try {
    if (id == nullptr) {
      extracted = setup.extract_entity_id(e->value);
      id = &extracted;
    }
    if (id->empty()) {
      reject_to_dead_letters(region, e, errc::invalid_entity_id,
                             "region " + type + ": empty entity id");
      return;
    }
    shard = setup.extract_shard_id ? setup.extract_shard_id(*id)
                                   : shard_of(*id, setup.settings.num_shards);
    if (shard >= setup.settings.num_shards) {
      reject_to_dead_letters(region, e, errc::invalid_entity_id,
                             "region " + type + ": entity '" + *id + "' maps to shard " +
                                 std::to_string(shard) + ", beyond its " +
                                 std::to_string(setup.settings.num_shards) + " shards");
      return;
    }
    if (setup.extract_entity_message) e->value = setup.extract_entity_message(std::move(e->value));
  } catch (const std::exception& ex) {
    reject_to_dead_letters(region, e, errc::invalid_entity_id,
                           "region " + type +
                               (id != nullptr ? ": cannot route entity '" + *id + "': "
                                              : ": the entity-id extractor threw: ") +
                               ex.what());
    return;
  }
  std::vector<entity_key> evict;
  switch (setup.directory->deliver(shard, *id, e, evict)) {
    case delivery::delivered:
    case delivery::held:
      break;
    case delivery::start_entity:
      region.target()->enqueue(new troupe::detail::envelope<region_message<M>>(
          std::in_place_type<start_entity>, start_entity{shard, *id}));
      break;
    case delivery::closed:
      reject_to_dead_letters(region, e, errc::recipient_terminated,
                             "region " + type + " has stopped");
      break;
    case delivery::buffer_full:
      reject_to_dead_letters(region, e, errc::mailbox_full,
                             "region " + type + ": shard " + std::to_string(shard) +
                                 " holds its buffer-size of messages for entities starting or "
                                 "stopping");
      break;
  }
  if (!evict.empty()) {
    region.target()->enqueue(new troupe::detail::envelope<region_message<M>>(
        std::in_place_type<passivate_entities>, passivate_entities{std::move(evict)}));
  }
}

}  // namespace troupe::sharding::detail
