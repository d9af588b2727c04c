#include "troupe/sharding/passivation_policy.hpp"

#include "troupe/sharding/detail/id_hash.hpp"

#include <utility>

namespace troupe::sharding {

std::size_t entity_key_hash::operator()(entity_key_view key) const noexcept {
  const std::size_t h = detail::hash_id(key.id);
  // Mix in the shard (boost::hash_combine's constant): ids repeat across shards only by accident,
  // but equal ids in different shards must still be different keys.
  return h ^ (std::hash<shard_id>{}(key.shard) + 0x9e3779b97f4a7c15ULL + (h << 6U) + (h >> 2U));
}

idle_and_lru_policy::idle_and_lru_policy(passivation_settings settings)
    : settings_(settings), index_(0, slot_hash{&slots_}, slot_equal{&slots_}) {}

std::vector<entity_key> idle_and_lru_policy::entity_touched(entity_key_view key, time_point now) {
  std::uint32_t i;
  if (auto it = index_.find(key); it != index_.end()) {
    i = *it;
    if (!slots_[i].passivating) unlink(i);
  } else {
    i = allocate(key);
    index_.insert(i);
  }
  // A passivating entity that gets a message is active again: the shard buffers the message for
  // its next incarnation, which the policy tracks from here on.
  entry& e = slots_[i];
  e.passivating = false;
  e.last_touched = now;
  link_at_tail(i);

  std::vector<entity_key> out;
  if (settings_.max_entities != 0) {
    // The touched entity is at the tail and the limit is at least 1, so it is never evicted.
    while (active_ > settings_.max_entities) start_passivating(head_, out);
  }
  return out;
}

void idle_and_lru_policy::entity_stopped(entity_key_view key) {
  const auto it = index_.find(key);
  if (it == index_.end()) return;
  const std::uint32_t i = *it;
  index_.erase(it);
  entry& e = slots_[i];
  if (!e.passivating) unlink(i);
  e.id.assign({});  // give a long id's memory back
  e.next = std::exchange(free_, i);
}

std::vector<entity_key> idle_and_lru_policy::entity_started(entity_key_view key, time_point now) {
  if (index_.contains(key)) return {};
  return entity_touched(key, now);
}

std::vector<entity_key> idle_and_lru_policy::interval_passed(time_point now) {
  std::vector<entity_key> out;
  if (settings_.idle <= duration::zero()) return out;
  // Touch times do not decrease, so the list is also sorted by last_touched: stop at the first
  // entity that is not idle yet.
  while (head_ != none && now - slots_[head_].last_touched >= settings_.idle) {
    start_passivating(head_, out);
  }
  return out;
}

std::uint32_t idle_and_lru_policy::allocate(entity_key_view key) {
  std::uint32_t i;
  if (free_ != none) {
    i = free_;
    free_ = slots_[i].next;
  } else {
    i = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  entry& e = slots_[i];
  e.id.assign(key.id);
  e.shard = key.shard;
  e.passivating = false;
  return i;
}

void idle_and_lru_policy::link_at_tail(std::uint32_t i) {
  entry& e = slots_[i];
  e.prev = tail_;
  e.next = none;
  if (tail_ != none) {
    slots_[tail_].next = i;
  } else {
    head_ = i;
  }
  tail_ = i;
  ++active_;
}

void idle_and_lru_policy::unlink(std::uint32_t i) {
  entry& e = slots_[i];
  if (e.prev != none) {
    slots_[e.prev].next = e.next;
  } else {
    head_ = e.next;
  }
  if (e.next != none) {
    slots_[e.next].prev = e.prev;
  } else {
    tail_ = e.prev;
  }
  e.prev = none;
  e.next = none;
  --active_;
}

void idle_and_lru_policy::start_passivating(std::uint32_t i, std::vector<entity_key>& out) {
  unlink(i);
  slots_[i].passivating = true;
  out.push_back(entity_key{slots_[i].shard, std::string(slots_[i].id.view())});
}

std::unique_ptr<passivation_policy> make_passivation_policy(const passivation_settings& settings) {
  return std::make_unique<idle_and_lru_policy>(settings);
}

}  // namespace troupe::sharding
