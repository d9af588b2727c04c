#include <troupe/core/detail/actor_target.hpp>
#include <troupe/sharding/detail/entity_directory.hpp>

#include <algorithm>

namespace troupe::sharding::detail {

namespace {

// Counters per shard of the hot-key sample: the hottest ids of a region are the hottest of the
// shards' (each id lives in one shard), so a few per shard are enough.
constexpr std::size_t hot_counters_per_shard = 16;

}  // namespace

entity_directory::entity_directory(std::uint32_t num_shards, std::size_t buffer_size,
                                   std::size_t max_entities, std::shared_ptr<troupe::clock> clock)
    : num_shards_(num_shards),
      buffer_size_(buffer_size),
      clock_(std::move(clock)),
      partitions_(new std::atomic<partition*>[num_shards]) {
  for (std::uint32_t i = 0; i < num_shards; ++i) partitions_[i].store(nullptr);
  if (max_entities > 0) {
    lru_ = std::make_unique<lru_limit>(max_entities);
  }
}

entity_directory::~entity_directory() {
  for (std::uint32_t i = 0; i < num_shards_; ++i) {
    partition* p = partitions_[i].load();
    if (p == nullptr) continue;
    for (auto& [id, en] : p->entities) {
      if (en.waiting) {
        for (auto* e : en.waiting->messages) delete e;
      }
    }
    delete p;
  }
}

entity_directory::partition* entity_directory::find(shard_id shard) const noexcept {
  return partitions_[shard].load(std::memory_order_acquire);
}

entity_directory::partition& entity_directory::at(shard_id shard) {
  if (partition* p = find(shard)) return *p;
  auto fresh = std::make_unique<partition>();
  partition* expected = nullptr;
  // Sequentially consistent with close(): a partition made while the region closes is seen
  // by close() or sees closed_ itself.
  if (partitions_[shard].compare_exchange_strong(expected, fresh.get())) {
    return *fresh.release();
  }
  return *expected;  // another sender made it first
}

void entity_directory::hold(partition& p, entry& en, troupe::detail::envelope_base* e) {
  if (!en.waiting) {
    en.waiting = std::make_unique<held_messages>();
    en.waiting->since = clock_->now();
  }
  en.waiting->messages.push_back(e);
  p.held_peak = std::max(p.held_peak, ++p.held);
}

std::unique_ptr<entity_directory::held_messages> entity_directory::take_waiting(partition& p,
                                                                                entry& en) {
  std::unique_ptr<held_messages> w = std::move(en.waiting);
  if (w) {
    p.held -= w->messages.size();
    p.max_hold = std::max(p.max_hold, clock_->now() - w->since);
  }
  return w;
}

delivery entity_directory::deliver(shard_id shard, std::string_view id,
                                   troupe::detail::envelope_base* e,
                                   std::vector<entity_key>& evict) {
  partition& p = at(shard);
  delivery outcome = delivery::delivered;
  {
    const std::lock_guard lock(p.mutex);
    if (closed_.load()) return delivery::closed;
    // Sampled: counting every message would cost more than routing it, and 1 in 16 names a
    // hot key just as well.
    if ((++p.sampled & 15U) == 0) {
      if (!p.hot) p.hot = std::make_unique<hot_keys>(hot_counters_per_shard);
      p.hot->record(id, 16);
    }
    auto it = p.entities.find(id);
    if (it != p.entities.end() && it->second.st == state::active) {
      ++p.messages;
      it->second.touched = epoch_.load(std::memory_order_relaxed);
      it->second.ref.target()->enqueue(e);
    } else if (p.held >= buffer_size_) {
      return delivery::buffer_full;
    } else {
      ++p.messages;
      if (it == p.entities.end()) {
        it = p.entities.try_emplace(std::string(id)).first;
        outcome = delivery::start_entity;
      } else {
        outcome = delivery::held;
      }
      it->second.touched = epoch_.load(std::memory_order_relaxed);
      hold(p, it->second, e);
    }
  }
  if (lru_) {
    // One order for the whole region, under its own lock: only types with a limit pay for it.
    const std::lock_guard lock(lru_->mutex);
    auto victims = lru_->policy.entity_touched(entity_key_view(shard, id), time_point{});
    evict.insert(evict.end(), std::make_move_iterator(victims.begin()),
                 std::make_move_iterator(victims.end()));
  }
  return outcome;
}

bool entity_directory::activate(shard_id shard, std::string_view id, const untyped_ref& entity) {
  partition& p = at(shard);
  const std::lock_guard lock(p.mutex);
  auto it = p.entities.find(id);
  if (it == p.entities.end() || it->second.st != state::starting) return false;
  if (auto w = take_waiting(p, it->second)) {
    for (auto* e : w->messages) entity.target()->enqueue(e);
  }
  it->second.ref = entity;
  it->second.st = state::active;
  return true;
}

std::vector<troupe::detail::envelope_base*> entity_directory::fail_start(shard_id shard,
                                                                         std::string_view id) {
  std::vector<troupe::detail::envelope_base*> out;
  {
    partition& p = at(shard);
    const std::lock_guard lock(p.mutex);
    auto it = p.entities.find(id);
    if (it == p.entities.end() || it->second.st != state::starting) return out;
    if (auto w = take_waiting(p, it->second)) out = std::move(w->messages);
    p.entities.erase(it);
  }
  forget(shard, id);
  return out;
}

untyped_ref entity_directory::begin_stop(shard_id shard, std::string_view id,
                                         const troupe::detail::actor_target* only) {
  partition& p = at(shard);
  const std::lock_guard lock(p.mutex);
  auto it = p.entities.find(id);
  if (it == p.entities.end() || it->second.st != state::active) return {};
  if (only != nullptr && it->second.ref.target() != only) return {};
  it->second.st = state::stopping;
  return it->second.ref;
}

after_stop entity_directory::entity_terminated(shard_id shard, std::string_view id,
                                               const troupe::detail::actor_target* who) {
  partition& p = at(shard);
  {
    const std::lock_guard lock(p.mutex);
    auto it = p.entities.find(id);
    if (it == p.entities.end() || it->second.ref.target() != who) return after_stop::unknown;
    if (it->second.waiting) {
      // The next incarnation takes the waiting messages; for the LRU order (which those
      // messages already touched) the entity never stopped.
      it->second.ref = {};
      it->second.st = state::starting;
      return after_stop::restart;
    }
    p.entities.erase(it);
  }
  forget(shard, id);
  return after_stop::forgotten;
}

void entity_directory::forget(shard_id shard, std::string_view id) {
  if (!lru_) return;
  const std::lock_guard lock(lru_->mutex);
  lru_->policy.entity_stopped(entity_key_view(shard, id));
}

std::vector<std::string> entity_directory::entity_ids(shard_id shard) {
  std::vector<std::string> ids;
  partition* p = find(shard);
  if (p == nullptr) return ids;
  const std::lock_guard lock(p->mutex);
  for (const auto& [id, en] : p->entities) {
    if (en.st != state::starting) ids.push_back(id);
  }
  return ids;
}

bool entity_directory::empty(shard_id shard) {
  partition* p = find(shard);
  if (p == nullptr) return true;
  const std::lock_guard lock(p->mutex);
  return p->entities.empty();
}

partition_figures entity_directory::figures(shard_id shard) {
  partition_figures out;
  partition* p = find(shard);
  if (p == nullptr) return out;
  const std::lock_guard lock(p->mutex);
  out.messages = p->messages;
  out.messages_since = p->messages - p->messages_base;
  for (const auto& [id, en] : p->entities) {
    if (en.st != state::starting) ++out.entities;
  }
  out.held = p->held;
  out.held_peak = p->held_peak;
  out.max_hold = p->max_hold;
  return out;
}

template <class Drop>
void entity_directory::erase_entries(partition& p, shard_id shard, Drop drop,
                                     std::vector<troupe::detail::envelope_base*>& out) {
  std::vector<std::string> forgotten;
  {
    const std::lock_guard lock(p.mutex);
    for (auto it = p.entities.begin(); it != p.entities.end();) {
      if (!drop(it->second)) {
        ++it;
        continue;
      }
      if (auto w = take_waiting(p, it->second)) {
        out.insert(out.end(), w->messages.begin(), w->messages.end());
      }
      if (lru_) forgotten.push_back(it->first);
      p.entities.erase(it++);  // erasing leaves the other elements where they are
    }
    p.messages_base = p.messages;
  }
  for (const auto& id : forgotten) forget(shard, id);
}

std::vector<troupe::detail::envelope_base*> entity_directory::shard_stopped(shard_id shard) {
  std::vector<troupe::detail::envelope_base*> out;
  if (partition* p = find(shard)) {
    erase_entries(
        *p, shard, [](const entry& en) { return en.st != state::starting; }, out);
  }
  return out;
}

std::vector<troupe::detail::envelope_base*> entity_directory::close() {
  closed_.store(true);
  std::vector<troupe::detail::envelope_base*> out;
  for (std::uint32_t s = 0; s < num_shards_; ++s) {
    if (partition* p = partitions_[s].load()) {
      erase_entries(
          *p, s, [](const entry&) { return true; }, out);
    }
  }
  return out;
}

std::vector<entity_key> entity_directory::idle_entities() {
  const std::uint32_t now = epoch_.fetch_add(1, std::memory_order_relaxed) + 1;
  std::vector<entity_key> out;
  for (std::uint32_t s = 0; s < num_shards_; ++s) {
    partition* p = find(s);
    if (p == nullptr) continue;
    const std::lock_guard lock(p->mutex);
    for (const auto& [id, en] : p->entities) {
      // Touched in epoch `now - 3` or earlier: no message since at least two full intervals.
      if (en.st == state::active && now - en.touched >= 3) out.push_back({s, id});
    }
  }
  return out;
}

void entity_directory::rotate_hot_keys() {
  for (std::uint32_t s = 0; s < num_shards_; ++s) {
    partition* p = find(s);
    if (p == nullptr) continue;
    const std::lock_guard lock(p->mutex);
    if (p->hot) p->hot->rotate();
  }
}

std::vector<std::pair<std::string, std::uint64_t>> entity_directory::hottest(std::size_t k) {
  std::vector<std::pair<std::string, std::uint64_t>> all;
  for (std::uint32_t s = 0; s < num_shards_; ++s) {
    partition* p = find(s);
    if (p == nullptr) continue;
    const std::lock_guard lock(p->mutex);
    if (!p->hot) continue;
    auto top = p->hot->top(k);
    all.insert(all.end(), std::make_move_iterator(top.begin()), std::make_move_iterator(top.end()));
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (all.size() > k) all.resize(k);
  return all;
}

}  // namespace troupe::sharding::detail
