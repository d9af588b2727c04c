#pragma once
/// Which entities to passivate, decided by a pure object: events go in (an entity got a message,
/// an entity stopped, the passivation timer ticked) and the ids to passivate come out. It reads
/// no clock and starts no timer; the caller passes the time of each event, so tests (and offline
/// simulations of access patterns) drive it by hand. Akka's EntityPassivationStrategy has the same
/// shape.
///
/// The caller (the region, which sees the traffic of every shard on its node) asks the owning
/// shard to stop each returned entity, and reports each stop with entity_stopped() and each
/// start with entity_started(). Reports arrive late: a stop report may cross a message that has
/// already started the entity again. The start report that follows puts it back, so once
/// reports stop flowing the policy tracks exactly the entities that run.
///
/// **Returned once.** An entity a policy has returned is *passivating*: the policy does not return
/// it again, and it no longer counts as active, until either
/// - entity_stopped() reports it gone (the policy forgets it), or
/// - entity_touched() reports a new message for it (it is active again, as recently used as any
///   other touched entity, and may be returned again later).
/// entity_stopped() forgets an entity whatever its state, so after a stop the next message's
/// entity_touched() starts tracking the new incarnation afresh.

#include <troupe/core/clock.hpp>
#include <troupe/sharding/detail/compact_id.hpp>
#include <troupe/sharding/shard_id.hpp>

#include <boost/unordered/unordered_flat_set.hpp>

#include <chrono>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::sharding {

/// An entity on this node: the shard it lives in and its id.
struct entity_key {
  shard_id shard = 0;
  std::string id;

  friend bool operator==(const entity_key&, const entity_key&) = default;
  friend std::strong_ordering operator<=>(const entity_key&, const entity_key&) = default;
};

/// An entity_key that refers to an id held elsewhere: what the policy is fed (no copy per
/// message).
struct entity_key_view {
  shard_id shard = 0;
  std::string_view id;

  entity_key_view() = default;
  entity_key_view(shard_id s, std::string_view i) : shard(s), id(i) {}
  entity_key_view(const entity_key& key)  // NOLINT(google-explicit-constructor)
      : shard(key.shard), id(key.id) {}
};

/// Hashes an entity_key or a view of one alike (also available as std::hash<entity_key>).
struct entity_key_hash {
  using is_transparent = void;
  [[nodiscard]] std::size_t operator()(entity_key_view key) const noexcept;
  [[nodiscard]] std::size_t operator()(const entity_key& key) const noexcept {
    return (*this)(entity_key_view(key));
  }
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
  [[nodiscard]] virtual std::vector<entity_key> entity_touched(entity_key_view key,
                                                               time_point now) = 0;

  /// `key` has stopped, for whatever reason (passivated, failed, its shard handed off): the
  /// policy forgets it. Unknown keys are ignored.
  virtual void entity_stopped(entity_key_view key) = 0;

  /// An incarnation of `key` has started at `now`. A key the policy tracks already stays as it
  /// is; an unknown one (its stop report crossed the message that started it again) is tracked
  /// from here on, as if touched. Returns the entities to passivate because of it.
  [[nodiscard]] virtual std::vector<entity_key> entity_started(entity_key_view key,
                                                               time_point now) = 0;

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

  [[nodiscard]] std::vector<entity_key> entity_touched(entity_key_view key,
                                                       time_point now) override;
  void entity_stopped(entity_key_view key) override;
  [[nodiscard]] std::vector<entity_key> entity_started(entity_key_view key,
                                                       time_point now) override;
  [[nodiscard]] std::vector<entity_key> interval_passed(time_point now) override;
  [[nodiscard]] std::size_t active() const override { return active_; }

  /// How many returned entities have been neither reported stopped nor touched since.
  [[nodiscard]] std::size_t passivating() const { return index_.size() - active_; }

  [[nodiscard]] const passivation_settings& settings() const { return settings_; }

 private:
  // Entries live in one vector (slots_, recycled through a free list) and link by index: no
  // allocation per entity (ids up to 15 bytes sit inline), 40 bytes each. Active entries form the
  // recency list, least recently touched at the head; passivating ones are unlinked.
  static constexpr std::uint32_t none = UINT32_MAX;
  struct entry {
    detail::compact_id id;
    time_point last_touched;
    std::uint32_t prev = none;
    std::uint32_t next = none;  // also links the free list
    shard_id shard = 0;
    bool passivating = false;
  };
  // The index holds slot numbers; these look the keys up in slots_ (transparently, by view).
  struct slot_hash {
    using is_transparent = void;
    const std::vector<entry>* slots;
    std::size_t operator()(std::uint32_t i) const noexcept {
      const entry& e = (*slots)[i];
      return entity_key_hash{}(entity_key_view(e.shard, e.id.view()));
    }
    std::size_t operator()(entity_key_view key) const noexcept { return entity_key_hash{}(key); }
  };
  struct slot_equal {
    using is_transparent = void;
    const std::vector<entry>* slots;
    bool operator()(std::uint32_t a, std::uint32_t b) const noexcept { return a == b; }
    bool operator()(entity_key_view key, std::uint32_t i) const noexcept {
      const entry& e = (*slots)[i];
      return e.shard == key.shard && e.id.view() == key.id;
    }
    bool operator()(std::uint32_t i, entity_key_view key) const noexcept { return (*this)(key, i); }
  };

  std::uint32_t allocate(entity_key_view key);
  void link_at_tail(std::uint32_t i);
  void unlink(std::uint32_t i);
  // Unlinks slot `i`, marks it passivating and appends its key to `out`.
  void start_passivating(std::uint32_t i, std::vector<entity_key>& out);

  passivation_settings settings_;
  std::vector<entry> slots_;
  std::uint32_t free_ = none;
  boost::unordered_flat_set<std::uint32_t, slot_hash, slot_equal> index_;
  std::uint32_t head_ = none;
  std::uint32_t tail_ = none;
  std::size_t active_ = 0;
};

/// The policy that `settings` describes (today always an idle_and_lru_policy).
[[nodiscard]] std::unique_ptr<passivation_policy> make_passivation_policy(
    const passivation_settings& settings);

}  // namespace troupe::sharding

template <>
struct std::hash<troupe::sharding::entity_key> : troupe::sharding::entity_key_hash {};
