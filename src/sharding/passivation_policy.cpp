#include "troupe/sharding/passivation_policy.hpp"

#include <string_view>
#include <utility>

namespace troupe::sharding {

std::size_t entity_key_hash::operator()(const entity_key& key) const noexcept {
  const std::size_t h = std::hash<std::string_view>{}(key.id);
  // Mix in the shard (boost::hash_combine's constant): ids repeat across shards only by accident,
  // but equal ids in different shards must still be different keys.
  return h ^ (std::hash<shard_id>{}(key.shard) + 0x9e3779b97f4a7c15ULL + (h << 6U) + (h >> 2U));
}

idle_and_lru_policy::idle_and_lru_policy(passivation_settings settings) : settings_(settings) {}

std::vector<entity_key> idle_and_lru_policy::entity_touched(const entity_key& key, time_point now) {
  auto [it, inserted] = entries_.try_emplace(key);
  entry& e = it->second;
  if (inserted) {
    e.key = &it->first;
  } else if (!e.passivating) {
    unlink(e);
  }
  // A passivating entity that gets a message is active again: the shard buffers the message for
  // its next incarnation, which the policy tracks from here on.
  e.passivating = false;
  e.last_touched = now;
  link_at_tail(e);

  std::vector<entity_key> out;
  if (settings_.max_entities != 0) {
    // The touched entity is at the tail and the limit is at least 1, so it is never evicted.
    while (active_ > settings_.max_entities) start_passivating(*head_, out);
  }
  return out;
}

void idle_and_lru_policy::entity_stopped(const entity_key& key) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return;
  if (!it->second.passivating) unlink(it->second);
  entries_.erase(it);
}

std::vector<entity_key> idle_and_lru_policy::interval_passed(time_point now) {
  std::vector<entity_key> out;
  if (settings_.idle <= duration::zero()) return out;
  // Touch times do not decrease, so the list is also sorted by last_touched: stop at the first
  // entity that is not idle yet.
  while (head_ != nullptr && now - head_->last_touched >= settings_.idle) {
    start_passivating(*head_, out);
  }
  return out;
}

void idle_and_lru_policy::link_at_tail(entry& e) {
  e.prev = tail_;
  e.next = nullptr;
  if (tail_ != nullptr) {
    tail_->next = &e;
  } else {
    head_ = &e;
  }
  tail_ = &e;
  ++active_;
}

void idle_and_lru_policy::unlink(entry& e) {
  if (e.prev != nullptr) {
    e.prev->next = e.next;
  } else {
    head_ = e.next;
  }
  if (e.next != nullptr) {
    e.next->prev = e.prev;
  } else {
    tail_ = e.prev;
  }
  e.prev = nullptr;
  e.next = nullptr;
  --active_;
}

void idle_and_lru_policy::start_passivating(entry& e, std::vector<entity_key>& out) {
  unlink(e);
  e.passivating = true;
  out.push_back(*e.key);
}

std::unique_ptr<passivation_policy> make_passivation_policy(const passivation_settings& settings) {
  return std::make_unique<idle_and_lru_policy>(settings);
}

}  // namespace troupe::sharding
