#pragma once
/// INTERNAL. Where a region's entities are, shared by everyone who sends to them: a sender hands
/// each message straight to its entity's mailbox, on its own thread, instead of through the
/// region's and the shard's mailboxes (two hand-offs and two envelopes less per message; Orleans
/// routes to activations the same way). The region and shard actors still decide everything
/// about lifecycles; they record their decisions here.
///
/// One partition per shard, each behind its own mutex. An entity is in one of three states:
/// - *starting*: a sender found no entity and asked the region for one; messages wait here;
/// - *active*: messages go to its mailbox under the partition's lock;
/// - *stopping*: its shard told it to stop; messages wait here for the next incarnation.
/// Every message for an id passes the same lock and its waiting messages are handed over before
/// the entity turns active, so messages from one sender arrive in the order sent whichever way
/// they went.

#include <troupe/core/actor_ref.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/core/detail/envelope.hpp>
#include <troupe/sharding/detail/id_hash.hpp>
#include <troupe/sharding/hot_keys.hpp>
#include <troupe/sharding/passivation_policy.hpp>
#include <troupe/sharding/shard_id.hpp>

#include <boost/unordered/unordered_flat_map.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace troupe::sharding::detail {

/// What became of a message handed to deliver().
enum class delivery : std::uint8_t {
  delivered,     // in the entity's mailbox
  held,          // waiting for its entity to start or to finish stopping
  start_entity,  // held, and the entity must be started (the caller asks the region)
  buffer_full,   // not taken: the shard already holds buffer_size messages
  closed,        // not taken: the region has stopped
};

/// A shard's figures as the directory counts them.
struct partition_figures {
  std::uint64_t messages = 0;        // delivered or held, ever
  std::uint64_t messages_since = 0;  // ... since the last shard actor stopped
  std::size_t entities = 0;          // started (active or stopping)
  std::size_t held = 0;
  std::size_t held_peak = 0;
  duration max_hold = duration::zero();
};

/// What entity_terminated() found.
enum class after_stop : std::uint8_t {
  unknown,    // not the incarnation the directory knows (nothing to do)
  forgotten,  // gone, nothing waited for it
  restart,    // messages wait: start the next incarnation (the entry is starting again)
};

class entity_directory {
 public:
  /// `max_entities` > 0 keeps an exact least-recently-used order (under one lock per region).
  entity_directory(std::uint32_t num_shards, std::size_t buffer_size, std::size_t max_entities,
                   std::shared_ptr<troupe::clock> clock);
  ~entity_directory();
  entity_directory(const entity_directory&) = delete;
  entity_directory& operator=(const entity_directory&) = delete;

  [[nodiscard]] std::uint32_t num_shards() const noexcept { return num_shards_; }

  // -- senders --------------------------------------------------------------------------------
  /// Hands `e` (owned, unless buffer_full) to entity `id` of `shard` (< num_shards()). With an
  /// LRU limit, appends the entities the limit now passivates to `evict`.
  delivery deliver(shard_id shard, std::string_view id, troupe::detail::envelope_base* e,
                   std::vector<entity_key>& evict);

  // -- the shard ------------------------------------------------------------------------------
  /// The entity `id` runs as `entity`: its waiting messages go to its mailbox, in order, and it
  /// turns active. False when `id` was not starting (the caller stops `entity`).
  bool activate(shard_id shard, std::string_view id, const untyped_ref& entity);
  /// The entity `id` could not be started: forgets it and returns its waiting messages.
  std::vector<troupe::detail::envelope_base*> fail_start(shard_id shard, std::string_view id);
  /// Marks the active entity `id` stopping, if it is `only` (or any incarnation when `only` is
  /// null); returns it, or an empty ref when there is nothing to stop.
  untyped_ref begin_stop(shard_id shard, std::string_view id,
                         const troupe::detail::actor_target* only);
  /// The incarnation `who` of `id` has terminated.
  after_stop entity_terminated(shard_id shard, std::string_view id,
                               const troupe::detail::actor_target* who);
  /// Ids of the started entities of `shard`.
  [[nodiscard]] std::vector<std::string> entity_ids(shard_id shard);
  /// True when `shard` has no entity in any state.
  [[nodiscard]] bool empty(shard_id shard);
  [[nodiscard]] partition_figures figures(shard_id shard);
  /// The shard actor has stopped, and its entities with it: forgets them and returns what
  /// waited for them. Entities still starting stay (their start is on its way to the region).
  std::vector<troupe::detail::envelope_base*> shard_stopped(shard_id shard);

  // -- the region -----------------------------------------------------------------------------
  /// One passivation tick: returns the active entities no message touched during the last two
  /// full tick intervals (so, ticking every idle / 2, idle for between idle and 1.5 x idle).
  [[nodiscard]] std::vector<entity_key> idle_entities();
  /// Starts a new hot-key window bucket in every shard.
  void rotate_hot_keys();
  /// Up to `k` hottest ids over all shards (sampled: 1 message in 16 counts 16).
  [[nodiscard]] std::vector<std::pair<std::string, std::uint64_t>> hottest(std::size_t k);
  /// The region has stopped: refuses every later message, forgets every entity and returns
  /// every message that waited (refs held here would otherwise keep the system alive).
  std::vector<troupe::detail::envelope_base*> close();

 private:
  enum class state : std::uint8_t { starting, active, stopping };
  struct held_messages {
    std::vector<troupe::detail::envelope_base*> messages;
    time_point since;  // when the first of them arrived
  };
  struct entry {
    untyped_ref ref;                         // set while active or stopping
    std::unique_ptr<held_messages> waiting;  // while starting or stopping
    std::uint32_t touched = 0;               // the idle epoch of its last message
    state st = state::starting;
  };
  struct id_equal {
    using is_transparent = void;
    bool operator()(std::string_view a, std::string_view b) const noexcept { return a == b; }
  };
  struct partition {
    std::mutex mutex;
    boost::unordered_flat_map<std::string, entry, id_hasher, id_equal> entities;
    std::uint64_t messages = 0;
    std::uint64_t messages_base = 0;  // `messages` when the last shard actor stopped
    std::uint32_t sampled = 0;
    std::unique_ptr<hot_keys> hot;  // made on the first sample
    std::size_t held = 0;
    std::size_t held_peak = 0;
    duration max_hold = duration::zero();
  };
  struct lru_limit {
    explicit lru_limit(std::size_t max_entities)
        : policy(passivation_settings{duration::zero(), max_entities}) {}
    std::mutex mutex;
    idle_and_lru_policy policy;
  };

  partition& at(shard_id shard);
  [[nodiscard]] partition* find(shard_id shard) const noexcept;
  void hold(partition& p, entry& en, troupe::detail::envelope_base* e);
  std::unique_ptr<held_messages> take_waiting(partition& p, entry& en);
  void forget(shard_id shard, std::string_view id);
  // Erases the entries `drop` selects, appending their waiting messages to `out`.
  template <class Drop>
  void erase_entries(partition& p, shard_id shard, Drop drop,
                     std::vector<troupe::detail::envelope_base*>& out);

  const std::uint32_t num_shards_;
  const std::size_t buffer_size_;
  std::shared_ptr<troupe::clock> clock_;
  std::unique_ptr<std::atomic<partition*>[]> partitions_;  // made on first use
  std::atomic<std::uint32_t> epoch_{0};
  std::atomic<bool> closed_{false};
  std::unique_ptr<lru_limit> lru_;  // null without max_entities
};

}  // namespace troupe::sharding::detail
