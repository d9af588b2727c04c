#pragma once
/// INTERNAL. A shard: owns the entities of one shard id on this node. Spawns an entity on its
/// first message, passivates it on request, and buffers what arrives for an entity on its way
/// out, replaying it in order to the next incarnation.

#include <troupe/core/actor.hpp>
#include <troupe/core/dead_letters.hpp>
#include <troupe/core/supervision.hpp>
#include <troupe/sharding/entity_path.hpp>
#include <troupe/sharding/messages.hpp>
#include <troupe/sharding/sharding_options.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace troupe::sharding::detail {

/// Publishes `message` as a dead letter (failing an asker at once).
void dead_letter_from(actor_context& context, troupe::detail::envelope_base* message, errc code,
                      std::string reason);

template <class M>
using shard_message =
    std::variant<deliver<M>, passivate<M>, passivate_entity, get_entity_ids, shard_idle_check>;

/// What a shard needs from its region.
template <class M>
struct shard_setup {
  std::string type_name;
  shard_id id = 0;
  entity_spawner<M> spawn_entity;
  std::function<void(const untyped_ref& region, entity_stopped)> report_stopped;
  std::function<void(const untyped_ref& region, entity_started)> report_started;
  std::function<void(const untyped_ref& region, shard_idle)> report_idle;
  /// How long the shard may stand empty before it asks to stop; 0 keeps it resident.
  duration passivation_idle{};
  untyped_ref region;
  std::size_t buffer_size = 100'000;
};

template <class M>
class shard_actor final : public actor<shard_message<M>> {
 public:
  explicit shard_actor(std::shared_ptr<const shard_setup<M>> setup) : setup_(std::move(setup)) {}

 private:
  struct pending {
    M message;
    untyped_ref sender;
  };
  struct entity_slot {
    actor_ref<M> ref;
    bool stopping = false;
    std::vector<pending> buffer;  // for the next incarnation, while this one stops
  };

  /// Entity failures stop the entity (as in Akka Typed): its queued messages become dead
  /// letters, and the next message spawns a fresh incarnation.
  [[nodiscard]] supervisor_strategy child_supervision() const override {
    return supervisor_strategy::stopping();
  }

  void receive(shard_message<M>& msg) override {
    std::visit(
        overloaded{
            [this](deliver<M>& d) { on_deliver(std::move(d.entity_id), std::move(d.message)); },
            [this](passivate<M>& p) { on_passivate(p); },
            [this](passivate_entity& p) { on_passivate_entity(p.entity_id); },
            [this](shard_idle_check&) {
              if (entities_.empty()) {
                setup_->report_idle(setup_->region, shard_idle{setup_->id, delivered_});
              }
            },
            [this](get_entity_ids&) {
              std::vector<std::string> ids;
              ids.reserve(entities_.size());
              for (const auto& [id, slot] : entities_) ids.emplace_back(id);
              this->context().reply(std::move(ids));
            },
        },
        msg);
  }

  void pre_start() override { arm_idle_check(); }

  /// An empty shard asks its region, after its window, to be stopped.
  void arm_idle_check() {
    if (setup_->passivation_idle > duration::zero()) {
      this->timers().start_single("idle", shard_idle_check{}, setup_->passivation_idle);
    }
  }

  void on_deliver(std::string id, M message) {
    ++delivered_;
    const untyped_ref sender = this->context().sender();
    auto it = entities_.find(id);
    if (it != entities_.end() && it->second.stopping) {
      if (buffered_ >= setup_->buffer_size) {
        reject(std::move(message), sender, "shard buffer full while entity '" + id + "' stops");
        return;
      }
      it->second.buffer.push_back({std::move(message), sender});
      ++buffered_;
      return;
    }
    if (it == entities_.end()) {
      auto ref = start_entity(id);
      if (!ref) {
        reject(std::move(message), sender, "entity '" + id + "' could not be started");
        return;
      }
      it = entities_.emplace(id_of(*ref), entity_slot{*ref, false, {}}).first;
    }
    it->second.ref.tell(std::move(message), sender);
  }

  /// The id an entity cell carries (the map keys are views of it: no second copy per entity).
  static const std::string& id_of(const untyped_ref& entity) {
    return static_cast<troupe::detail::actor_cell*>(entity.target())->entity()->entity_id;
  }

  std::optional<actor_ref<M>> start_entity(const std::string& id, bool report = true) {
    try {
      auto ref = setup_->spawn_entity(
          this->context(), spawn_options(entity_child_name(id))
                               .with_entity(entity_identity{id, setup_->type_name, setup_->id}));
      if (report) setup_->report_started(setup_->region, entity_started{setup_->id});
      return ref;
    } catch (const std::exception& e) {
      this->context().log().error("cannot start entity '{}': {}", id, e.what());
      return std::nullopt;
    }
  }

  void on_passivate(passivate<M>& p) {
    if (!p.entity) return;
    auto it = entities_.find(id_of(p.entity));
    if (it == entities_.end() || it->second.ref.target() != p.entity.target()) return;
    auto& slot = it->second;
    if (slot.stopping) return;
    slot.stopping = true;
    std::visit(overloaded{[&](poison_pill& pill) { slot.ref.tell(pill); },
                          [&](M& stop) { slot.ref.tell(std::move(stop)); }},
               p.stop_message);
  }

  void on_passivate_entity(const std::string& id) {
    auto it = entities_.find(id);
    if (it == entities_.end() || it->second.stopping) return;
    it->second.stopping = true;
    // A poison pill, not a stop signal: messages already in the entity's mailbox are handled
    // first (a stop would overtake them). The entity's receive never sees it.
    it->second.ref.tell(poison_pill{});
  }

  // The shard is the entities' parent: it hears of each stop without watching (a watch would
  // cost every entity a watcher list).
  void on_child_terminated(const untyped_ref& who) override {
    // `who` keeps the stopped cell, and with it the id we read, alive for this call.
    const std::string& id = id_of(who);
    auto it = entities_.find(id);
    if (it == entities_.end() || it->second.ref.target() != who.target()) return;
    std::vector<pending> buffer = std::move(it->second.buffer);
    entities_.erase(it);
    buffered_ -= buffer.size();
    // With mail waiting, the next incarnation starts at once: for the region (and its
    // passivation policy, which those messages already touched) the entity never stopped.
    if (buffer.empty()) setup_->report_stopped(setup_->region, entity_stopped{setup_->id, id});
    // Messages that waited for this incarnation to end go, in order, to the next one.
    for (auto& p : buffer) deliver_buffered(id, std::move(p));
    if (entities_.empty()) arm_idle_check();
  }

  void deliver_buffered(const std::string& id, pending p) {
    auto it = entities_.find(id);
    if (it == entities_.end()) {
      auto ref = start_entity(id, /*report=*/false);
      if (!ref) {
        reject(std::move(p.message), p.sender, "entity '" + id + "' could not be restarted");
        return;
      }
      it = entities_.emplace(id_of(*ref), entity_slot{*ref, false, {}}).first;
    }
    it->second.ref.tell(std::move(p.message), p.sender);
  }

  void reject(M message, const untyped_ref& sender, std::string reason) {
    auto* e = new troupe::detail::envelope<M>(std::move(message));
    e->sender = sender.target_ptr();
    dead_letter_from(this->context(), e, errc::mailbox_full, std::move(reason));
  }

  std::shared_ptr<const shard_setup<M>> setup_;
  std::unordered_map<std::string_view, entity_slot> entities_;  // keys: views of id_of(ref)
  std::size_t buffered_ = 0;
  std::uint64_t delivered_ = 0;
};

}  // namespace troupe::sharding::detail
