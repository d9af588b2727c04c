#pragma once
/// INTERNAL. A shard: the parent of the entities of one shard id on this node. Starts an entity
/// when a sender found none, stops it when asked to passivate, and starts the next incarnation
/// when messages waited for it meanwhile. Messages themselves go from senders straight to the
/// entities (entity_directory); the shard records each start and stop there.

#include <troupe/core/actor.hpp>
#include <troupe/core/dead_letters.hpp>
#include <troupe/core/supervision.hpp>
#include <troupe/sharding/detail/entity_directory.hpp>
#include <troupe/sharding/entity_path.hpp>
#include <troupe/sharding/messages.hpp>
#include <troupe/sharding/shard_stats.hpp>
#include <troupe/sharding/sharding_options.hpp>

#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace troupe::sharding::detail {

/// Publishes `message` as a dead letter (failing an asker at once).
void dead_letter_from(actor_context& context, troupe::detail::envelope_base* message, errc code,
                      std::string reason);

template <class M>
using shard_message = std::variant<start_entity, passivate<M>, passivate_entity, get_entity_ids,
                                   get_shard_stats, shard_idle_check>;

/// What a shard needs from its region.
template <class M>
struct shard_setup {
  troupe::detail::entity_home home;  // every entity of the shard points at it
  shard_id id = 0;
  entity_spawner<M> spawn_entity;
  std::shared_ptr<entity_directory> directory;
  std::function<void(const untyped_ref& region, shard_idle)> report_idle;
  /// How long the shard may stand empty before it asks to stop; 0 keeps it resident.
  duration passivation_idle{};
  untyped_ref region;
};

/// The id an entity cell carries.
inline const std::string& entity_id_of(const untyped_ref& entity) {
  return *static_cast<troupe::detail::actor_cell*>(entity.target())->entity_id();
}

template <class M>
class shard_actor final : public actor<shard_message<M>> {
 public:
  explicit shard_actor(std::shared_ptr<shard_setup<M>> setup)
      : setup_(std::move(setup)), directory_(*setup_->directory) {}

 private:
  /// Entity failures stop the entity (as in Akka Typed): its queued messages become dead
  /// letters, and the next message spawns a fresh incarnation.
  [[nodiscard]] supervisor_strategy child_supervision() const override {
    return supervisor_strategy::stopping();
  }

  void receive(shard_message<M>& msg) override {
    std::visit(
        overloaded{
            [this](start_entity& s) {
              ++starts_;
              start(s.entity_id, "started");
            },
            [this](passivate<M>& p) { on_passivate(p); },
            [this](passivate_entity& p) {
              // A poison pill, not a stop signal: messages already in the entity's
              // mailbox are handled first (a stop would overtake them).
              if (auto e = directory_.begin_stop(setup_->id, p.entity_id, nullptr)) {
                e.tell(poison_pill{});
              }
            },
            [this](shard_idle_check&) {
              if (directory_.empty(setup_->id)) {
                setup_->report_idle(setup_->region, shard_idle{setup_->id, starts_});
              }
            },
            [this](get_entity_ids&) { this->context().reply(directory_.entity_ids(setup_->id)); },
            [this](get_shard_stats&) { this->context().reply(stats()); },
        },
        msg);
  }

  void pre_start() override {
    this->context().cell().set_child_entity_home(&setup_->home);
    arm_idle_check();
  }

  // Its entities stopped with it (the region's stop, or a failure of the shard itself).
  void post_stop() override {
    for (auto* m : directory_.shard_stopped(setup_->id)) {
      dead_letter_from(this->context(), m, errc::recipient_terminated,
                       "shard " + std::to_string(setup_->id) + " stopped");
    }
  }

  /// An empty shard asks its region, after its window, to be stopped.
  void arm_idle_check() {
    if (setup_->passivation_idle > duration::zero()) {
      this->timers().start_single("idle", shard_idle_check{}, setup_->passivation_idle);
    }
  }

  [[nodiscard]] shard_stats stats() {
    const partition_figures f = directory_.figures(setup_->id);
    shard_stats out;
    out.messages_processed = f.messages_since;
    out.entity_count = f.entities;
    out.held = f.held;
    out.held_peak = f.held_peak;
    out.max_hold = f.max_hold;
    return out;
  }

  /// Spawns entity `id` and hands it what waits for it; on failure, what waits becomes dead
  /// letters (its askers hear at once) and the next message tries again.
  void start(const std::string& id, const char* what) {
    std::optional<actor_ref<M>> ref;
    try {
      spawn_options options(entity_child_name(id));
      options.with_unique_name();  // one incarnation per id at a time: the directory says so
      // No home in the tag: the entity finds its home here, in its parent (8 bytes less each).
      options.with_entity(troupe::detail::entity_tag{id, nullptr});
      ref = setup_->spawn_entity(this->context(), std::move(options));
    } catch (const std::exception& e) {
      this->context().log().error("cannot start entity '{}': {}", id, e.what());
      for (auto* m : directory_.fail_start(setup_->id, id)) {
        dead_letter_from(this->context(), m, errc::actor_failed,
                         std::string("entity '") + id + "' could not be " + what + ": " + e.what());
      }
      if (directory_.empty(setup_->id)) arm_idle_check();
      return;
    }
    if (!directory_.activate(setup_->id, id, *ref)) ref->tell(poison_pill{});
  }

  void on_passivate(passivate<M>& p) {
    if (!p.entity) return;
    auto e = directory_.begin_stop(setup_->id, entity_id_of(p.entity), p.entity.target());
    if (!e) return;  // not active, or an older incarnation
    std::visit(overloaded{[&](poison_pill& pill) { e.tell(pill); },
                          [&](M& stop) { e.tell_any(std::move(stop)); }},
               p.stop_message);
  }

  // The shard is the entities' parent: it hears of each stop without watching (a watch would
  // cost every entity a watcher list).
  void on_child_terminated(const untyped_ref& who) override {
    // `who` keeps the stopped cell, and with it the id we read, alive for this call.
    const std::string& id = entity_id_of(who);
    if (directory_.entity_terminated(setup_->id, id, who.target()) == after_stop::restart) {
      start(id, "restarted");  // messages waited for this incarnation to end
    }
    if (directory_.empty(setup_->id)) arm_idle_check();
  }

  std::shared_ptr<shard_setup<M>> setup_;
  entity_directory& directory_;
  std::uint64_t starts_ = 0;  // start requests received
};

}  // namespace troupe::sharding::detail
