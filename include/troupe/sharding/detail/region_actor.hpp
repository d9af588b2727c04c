#pragma once
/// INTERNAL. A region: one per sharded type on this node. Messages pass it by (senders deliver
/// through the entity directory); the region actor runs the shards: starts a shard actor for the
/// first entity of a shard, stops it when it stands empty, passes on entity starts, passivates
/// idle entities (it ticks for the whole node) and answers introspection.

#include <troupe/core/actor.hpp>
#include <troupe/sharding/detail/region_setup.hpp>
#include <troupe/sharding/detail/route.hpp>
#include <troupe/sharding/detail/shard_actor.hpp>
#include <troupe/sharding/entity_path.hpp>
#include <troupe/sharding/messages.hpp>

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>

namespace troupe::sharding::detail {

template <class M>
class region_actor final : public actor<region_message<M>> {
 public:
  explicit region_actor(std::shared_ptr<const region_setup<M>> setup) : setup_(std::move(setup)) {}

 private:
  struct shard_entry {
    actor_ref<shard_message<M>> ref;
    std::uint64_t starts_sent = 0;  // to the current shard actor
    bool stopping = false;
    std::deque<std::string> waiting;  // entity starts that arrived while the shard actor stops
  };

  void pre_start() override {
    const duration idle = setup_->settings.passivation_idle;
    if (idle > duration::zero()) {
      // Checked twice per window: an idle entity stops between idle and 1.5 x idle.
      this->timers().start_periodic("passivation", passivation_tick{}, idle / 2);
    }
    // The hot-key window: ids counted over the last 30 to 60 seconds.
    this->timers().start_periodic("hot-keys", hot_keys_tick{}, std::chrono::seconds(30));
  }

  // Nothing is delivered after this: later senders get dead letters at once.
  void post_stop() override {
    for (auto* m : setup_->directory->close()) {
      dead_letter_from(this->context(), m, errc::recipient_terminated,
                       "region " + setup_->settings.type_name + " stopped");
    }
  }

  void receive(region_message<M>& msg) override {
    std::visit(overloaded{
                   [this](M& m) { route_here(std::move(m), nullptr); },
                   [this](routed<M>& r) { route_here(std::move(r.message), &r.entity_id); },
                   [this](start_entity& s) { on_start(s); },
                   [this](passivate_entities& p) {
                     for (const auto& key : p.entities) passivate(key);
                   },
                   [this](passivation_tick&) {
                     for (const auto& key : setup_->directory->idle_entities()) passivate(key);
                   },
                   [this](hot_keys_tick&) { setup_->directory->rotate_hot_keys(); },
                   [this](get_region_state&) { this->context().reply(state()); },
                   [this](shard_idle& idle) { on_shard_idle(idle); },
                   [this](shard_query& q) { on_shard_query(q); },
               },
               msg);
  }

  /// A message sent to the region actor itself (not through a region ref) is routed as a sender
  /// would.
  void route_here(M message, const std::string* id) {
    auto* e = new troupe::detail::envelope<M>(std::move(message));
    e->sender = this->context().sender().target_ptr();
    route(*setup_, this->context().self_ref(), e, id);
  }

  void on_start(start_entity& s) {
    auto& entry = shards_[s.shard];
    if (entry.stopping) {
      entry.waiting.push_back(std::move(s.entity_id));
      return;
    }
    start_in(s.shard, entry, std::move(s.entity_id));
  }

  void start_in(shard_id shard, shard_entry& entry, std::string id) {
    ensure_shard(shard, entry);
    ++entry.starts_sent;
    entry.ref.tell(start_entity{shard, std::move(id)});
  }

  /// Answers for a shard that has no running actor (it is empty), else asks the shard.
  void on_shard_query(shard_query& q) {
    auto it = shards_.find(q.shard);
    if (it == shards_.end() || !it->second.ref || it->second.stopping) {
      std::visit(
          overloaded{[this](get_entity_ids&) { this->context().reply(std::vector<std::string>{}); },
                     [this](get_shard_stats&) { this->context().reply(shard_stats{}); }},
          q.query);
      return;
    }
    const untyped_ref& sender = this->context().sender();
    std::visit([&](auto& query) { it->second.ref.tell(query, sender); }, q.query);
  }

  /// Stops a shard that stood empty, unless an entity start may still be on its way to it.
  void on_shard_idle(const shard_idle& idle) {
    auto it = shards_.find(idle.shard);
    if (it == shards_.end() || !it->second.ref || it->second.stopping) return;
    if (it->second.starts_sent != idle.delivered) return;  // it got a start meanwhile
    it->second.stopping = true;
    it->second.ref.tell(poison_pill{});
  }

  // Shards are the region's children: it hears of each stop without watching.
  void on_child_terminated(const untyped_ref& who) override {
    for (auto& [shard, entry] : shards_) {
      if (entry.ref.target() != who.target()) continue;
      // The shard actor is gone; the region keeps owning the shard id. Starts that arrived
      // meanwhile go, in order, to a fresh shard actor (no coordinator round trip).
      entry.ref = {};
      entry.stopping = false;
      entry.starts_sent = 0;
      std::deque<std::string> waiting = std::move(entry.waiting);
      for (auto& id : waiting) start_in(shard, entry, std::move(id));
      return;
    }
  }

  void ensure_shard(shard_id shard, shard_entry& entry) {
    if (entry.ref) return;
    auto setup = std::make_shared<shard_setup<M>>();
    setup->home = troupe::detail::entity_home{setup_->settings.type_name, shard, setup_->gate};
    setup->id = shard;
    setup->spawn_entity = setup_->spawn_entity;
    setup->directory = setup_->directory;
    setup->region = this->context().self_ref();
    setup->report_idle = [](const untyped_ref& region, shard_idle i) {
      region.tell_any(region_message<M>(std::in_place_type<shard_idle>, i));
    };
    setup->passivation_idle = setup_->settings.shard_passivation_idle;
    entry.ref =
        this->context().template spawn<shard_actor<M>>(shard_child_name(shard), std::move(setup));
  }

  void passivate(const entity_key& key) {
    auto it = shards_.find(key.shard);
    if (it == shards_.end() || !it->second.ref || it->second.stopping) return;
    it->second.ref.tell(passivate_entity{key.id});
  }

  [[nodiscard]] region_state state() {
    region_state out;
    out.type_name = setup_->settings.type_name;
    out.num_shards = setup_->settings.num_shards;
    for (const auto& [id, entry] : shards_) {
      const partition_figures f = setup_->directory->figures(id);
      shard_info info;
      info.id = id;
      info.resident = static_cast<bool>(entry.ref) && !entry.stopping;
      info.messages_processed = f.messages;
      out.shards.push_back(info);
      out.buffered += f.held;
    }
    out.hottest = setup_->directory->hottest(10);
    return out;
  }

  std::shared_ptr<const region_setup<M>> setup_;
  std::map<shard_id, shard_entry> shards_;  // ordered: introspection lists shards by id
};

}  // namespace troupe::sharding::detail
