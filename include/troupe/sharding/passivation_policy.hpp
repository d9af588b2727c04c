#pragma once
/// Which entities to passivate, decided by a pure object: events go in (an entity got a message,
/// an entity stopped, the passivation timer ticked) and the ids to passivate come out. It reads
/// no clock and starts no timer; the caller passes the time of each event, so tests (and offline
/// simulations of access patterns) drive it by hand. Akka's EntityPassivationStrategy has the same
/// shape.
///
/// The caller (the region, which sees the traffic of every shard on its node) asks the owning
/// shard to stop each returned entity, and reports each stop with entity_stopped().
///
/// **Returned once.** An entity a policy has returned is *passivating*: the policy does not return
/// it again, and it no longer counts as active, until either
/// - entity_stopped() reports it gone (the policy forgets it), or
/// - entity_touched() reports a new message for it (it is active again, as recently used as any
///   other touched entity, and may be returned again later).
/// entity_stopped() forgets an entity whatever its state, so after a stop the next message's
/// entity_touched() starts tracking the new incarnation afresh.

#include <troupe/core/clock.hpp>
#include <troupe/sharding/shard_id.hpp>

#include <chrono>
#include <compare>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace troupe::sharding {

/// An entity on this node: the shard it lives in and its id.
struct entity_key {
  shard_id shard = 0;
  std::string id;

  friend bool operator==(const entity_key&, const entity_key&) = default;
  friend std::strong_ordering operator<=>(const entity_key&, const entity_key&) = default;
};

/// Hashes an entity_key (also available as std::hash<entity_key>).
struct entity_key_hash {
  [[nodiscard]] std::size_t operator()(const entity_key& key) const noexcept;
};

/// The knobs of idle_and_lru_policy.
struct passivation_settings {
  /// Passivate an entity that got no message for this long; 0 switches idle passivation off.
  /// The default is the spec's `passivation-idle` default, 5 minutes.
  duration idle = std::chrono::minutes(5);
  /// Keep at most this many active entities, passivating the least recently used beyond it;
  /// 0 means no limit (the spec's `max-entities`, unset by default).
  std::size_t max_entities = 0;
};

/// Decides which entities to passivate from the events it is told about.
///
/// Time points passed to one policy must not decrease from call to call.
class passivation_policy {
 public:
  passivation_policy() = default;
  passivation_policy(const passivation_policy&) = delete;
  passivation_policy& operator=(const passivation_policy&) = delete;
  virtual ~passivation_policy() = default;

  /// `key` got a message at `now` (a new entity starts being tracked). Returns the entities to
  /// passivate because of it, e.g. those beyond a size limit; never `key` itself.
  [[nodiscard]] virtual std::vector<entity_key> entity_touched(const entity_key& key,
                                                               time_point now) = 0;

  /// `key` has stopped, for whatever reason (passivated, failed, its shard handed off): the
  /// policy forgets it. Unknown keys are ignored.
  virtual void entity_stopped(const entity_key& key) = 0;

  /// The caller's periodic tick at `now`. Returns the entities to passivate because of time,
  /// e.g. those idle for too long.
  [[nodiscard]] virtual std::vector<entity_key> interval_passed(time_point now) = 0;

  /// How many tracked entities are active: touched, and neither stopped nor passivating.
  [[nodiscard]] virtual std::size_t active() const = 0;
};

/// Idle timeout plus an LRU limit on the number of active entities, either of which can be off.
///
/// - **Idle.** interval_passed(now) returns every active entity whose last message was at least
///   `settings.idle` before `now`, least recently touched first. So an entity is passivated
///   between `idle` and `idle` + the tick interval after its last message.
/// - **Limit.** entity_touched() returns the least recently touched active entities beyond
///   `settings.max_entities`, oldest first.
///
/// entity_touched() and entity_stopped() cost O(1) (expected); interval_passed() costs O(1 +
/// returned), since the least recently touched entity is also the one idle the longest.
class idle_and_lru_policy final : public passivation_policy {
 public:
  explicit idle_and_lru_policy(passivation_settings settings);
  ~idle_and_lru_policy() override = default;

  [[nodiscard]] std::vector<entity_key> entity_touched(const entity_key& key,
                                                       time_point now) override;
  void entity_stopped(const entity_key& key) override;
  [[nodiscard]] std::vector<entity_key> interval_passed(time_point now) override;
  [[nodiscard]] std::size_t active() const override { return active_; }

  /// How many returned entities have been neither reported stopped nor touched since.
  [[nodiscard]] std::size_t passivating() const { return entries_.size() - active_; }

  [[nodiscard]] const passivation_settings& settings() const { return settings_; }

 private:
  // One tracked entity. Active entries are linked into the recency list, least recently touched
  // at the head; passivating ones are unlinked. The entry lives in entries_, whose nodes never
  // move, so the list links point straight at map values (an intrusive list: no extra node).
  struct entry {
    const entity_key* key = nullptr;
    time_point last_touched;
    entry* prev = nullptr;
    entry* next = nullptr;
    bool passivating = false;
  };

  void link_at_tail(entry& e);
  void unlink(entry& e);
  // Unlinks `e`, marks it passivating and appends its key to `out`.
  void start_passivating(entry& e, std::vector<entity_key>& out);

  passivation_settings settings_;
  std::unordered_map<entity_key, entry, entity_key_hash> entries_;
  entry* head_ = nullptr;
  entry* tail_ = nullptr;
  std::size_t active_ = 0;
};

/// The policy that `settings` describes (today always an idle_and_lru_policy).
[[nodiscard]] std::unique_ptr<passivation_policy> make_passivation_policy(
    const passivation_settings& settings);

}  // namespace troupe::sharding

template <>
struct std::hash<troupe::sharding::entity_key> : troupe::sharding::entity_key_hash {};
