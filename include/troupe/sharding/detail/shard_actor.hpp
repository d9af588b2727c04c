#pragma once
/// INTERNAL. A shard: owns the entities of one shard id on this node. Spawns an entity on its
/// first message, passivates it on request, and buffers what arrives for an entity on its way
/// out, replaying it in order to the next incarnation.

#include <troupe/core/actor.hpp>
#include <troupe/core/dead_letters.hpp>
#include <troupe/core/detail/runtime_instruments.hpp>
#include <troupe/core/node_standing.hpp>
#include <troupe/core/supervision.hpp>
#include <troupe/sharding/detail/back_pressure.hpp>
#include <troupe/sharding/detail/id_hash.hpp>
#include <troupe/sharding/detail/shard_metrics.hpp>
#include <troupe/sharding/detail/undelivered.hpp>
#include <troupe/sharding/entity_path.hpp>
#include <troupe/sharding/hot_keys.hpp>
#include <troupe/sharding/messages.hpp>
#include <troupe/sharding/remembered_entities.hpp>
#include <troupe/sharding/shard_stats.hpp>
#include <troupe/sharding/sharding_options.hpp>

#include <boost/unordered/unordered_flat_set.hpp>

#include <array>
#include <atomic>
#include <deque>
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

/// The ids the shard remembers, as its store listed them (remember entities).
struct remembered_listed {
  std::error_code error;
  std::vector<std::string> ids;
};
/// The shard's write of started and passivated ids ended.
struct remembered_written {
  std::error_code error;
  bool superseded = false;  // a newer owner of the shard has written: this one gives up
};
/// The shard's own timer: start the next remembered entities, or retry a failed list or write.
struct remember_tick {};
/// The shard's own periodic tick: start again what must always run and does not.
struct keep_alive_tick {};
/// The shard's own timer: start again a remembered entity that stopped without passivation.
struct restart_entity {
  std::string id;
};

template <class M>
using shard_message =
    std::variant<deliver<M>, passivate<M>, passivate_entity, get_entity_ids, get_shard_stats,
                 shard_idle_check, entity_idle_tick, hot_keys_tick, stop_entities,
                 remembered_listed, remembered_written, remember_tick, keep_alive_tick,
                 restart_entity>;

/// What a region's shards count for introspection (region_state), over the region's life:
/// written by the shards and the region, read by the region when asked for its state.
struct region_counts {
  std::array<std::atomic<std::uint64_t>, passivation_cause_count> passivations{};
  std::atomic<std::uint64_t> buffer_overflows{0};

  void count_passivation(passivation_cause cause) noexcept {
    passivations[static_cast<std::size_t>(cause)].fetch_add(1, std::memory_order_relaxed);
  }
  void count_overflow() noexcept { buffer_overflows.fetch_add(1, std::memory_order_relaxed); }
  [[nodiscard]] passivation_counts read_passivations() const noexcept {
    passivation_counts out{};
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = passivations[i].load(std::memory_order_relaxed);
    }
    return out;
  }
};

/// What a shard needs from its region.
template <class M>
struct shard_setup {
  troupe::detail::entity_home home;  // every entity of the shard points at it
  shard_id id = 0;
  entity_spawner<M> spawn_entity;
  /// Reads the id of a message that comes in the sender's own envelope (a direct delivery).
  entity_id_extractor<M> extract_entity_id;
  /// Applied here, just before the entity gets a message (null: none).
  std::function<M(M)> extract_entity_message;
  /// Set with an LRU limit: the region's policy follows every start and stop.
  std::function<void(const untyped_ref& region, entity_stopped)> report_stopped;
  std::function<void(const untyped_ref& region, entity_started)> report_started;
  std::function<void(const untyped_ref& region, shard_idle)> report_idle;
  /// How long the shard may stand empty before it asks to stop; 0 keeps it resident.
  duration passivation_idle{};
  /// Set when the shard itself passivates idle entities (the region keeps no LRU order): it
  /// ticks every entity_idle / 2.
  duration entity_idle{};
  untyped_ref region;
  std::size_t buffer_size = 100'000;
  /// How the shard supervises its entities (sharding_options::with_entity_options).
  supervisor_strategy entity_supervision = supervisor_strategy::stopping();
  /// Messages may come in counted envelopes (back_pressure.hpp), an entity ref's with its id.
  bool counted = false;
  /// Remember entities (null: off): the shard writes the ids it starts and the user passivates,
  /// as the owner at `epoch`, and starts what it remembers, within the type's `start_budget`.
  std::shared_ptr<remembered_entities> memory;
  std::shared_ptr<start_budget> budget;
  /// With remember entities: an entity that stopped without passivation starts again after it.
  duration restart_backoff = std::chrono::seconds(10);
  shard_epoch epoch = 0;
  /// Entities that always run while the shard lives here (a singleton, a daemon process's
  /// workers): started with the shard, and again each `keep_alive_interval` if they stopped.
  std::vector<std::string> keep_alive;
  duration keep_alive_interval = std::chrono::seconds(5);
  /// Deliveries sent to this shard actor, by the region or directly: written under the shard's
  /// route lock, read by the shard now and then to see how deep its mailbox is.
  std::atomic<std::uint64_t> sent{0};
  /// The shard id's activations over all its shard actors (its route keeps them), and the
  /// region's counts; never null.
  std::shared_ptr<std::atomic<std::uint64_t>> activations =
      std::make_shared<std::atomic<std::uint64_t>>(0);
  std::shared_ptr<region_counts> counts = std::make_shared<region_counts>();
};

/// The id an entity cell carries (the shard's index looks entities up by it: no second copy).
inline const std::string& entity_id_of(const untyped_ref& entity) {
  return *static_cast<troupe::detail::actor_cell*>(entity.target())->entity_id();
}

/// The cell behind a ref this layer spawned (an entity, a shard: always local).
inline troupe::detail::actor_cell& cell_of(const untyped_ref& entity) {
  return *static_cast<troupe::detail::actor_cell*>(entity.target());
}

/// Takes shard_message<M> (from its region, its timers and queries) and, from senders whose
/// shard route is open, their own envelopes of M, which it passes on to the entity as they are.
template <class M>
class shard_actor final : public basic_actor<shard_message<M>> {
 public:
  explicit shard_actor(std::shared_ptr<shard_setup<M>> setup) : setup_(std::move(setup)) {}

 private:
  // A message that waits for an entity's next incarnation, in the envelope it came in (the
  // sender's own, or a delivery): nothing moves while it waits.
  struct pending {
    std::unique_ptr<troupe::detail::envelope_base> envelope;
    M* message;
  };

  // The entities, found by id without storing it: 8 bytes per entity in a flat table.
  struct id_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view id) const noexcept { return hash_id(id); }
    std::size_t operator()(const actor_ref<M>& e) const noexcept {
      return (*this)(entity_id_of(e));
    }
  };
  struct id_equal {
    using is_transparent = void;
    bool operator()(const actor_ref<M>& a, const actor_ref<M>& b) const noexcept {
      return a.target() == b.target();
    }
    bool operator()(std::string_view id, const actor_ref<M>& e) const noexcept {
      return id == entity_id_of(e);
    }
    bool operator()(const actor_ref<M>& e, std::string_view id) const noexcept {
      return id == entity_id_of(e);
    }
  };

  /// By default entity failures stop the entity (as in Akka Typed): its queued messages become
  /// dead letters, and the next message spawns a fresh incarnation. The type may choose.
  [[nodiscard]] supervisor_strategy child_supervision() const override {
    return setup_->entity_supervision;
  }

  bool handle(troupe::detail::envelope_base& e) override {
    try {
      if (e.type() == typeid(M)) {
        if (setup_->counted) {
          auto* c = dynamic_cast<counted_envelope<M>*>(&e);
          if (c != nullptr && !c->entity_id.empty()) {
            const std::string id = c->entity_id;  // the envelope goes on to the entity
            deliver_to(id, c->value, time_point{}, /*pass_on=*/true);
            return false;
          }
        }
        on_direct(*static_cast<M*>(e.payload()));
      } else {
        receive(*static_cast<shard_message<M>*>(e.payload()));
      }
    } catch (...) {
      // A message that could not be moved on to its entity (its copy or move constructor threw)
      // is still in the envelope being handled: a dead letter from there; the shard goes on.
      if (M* message = message_in(e))
        reject(*message, errc::message_copy_failed, copy_failure_reason());
    }
    return false;
  }

  /// The message for an entity in `e` (the sender's own envelope or a delivery), else null.
  static M* message_in(troupe::detail::envelope_base& e) noexcept {
    if (e.type() == typeid(M)) return static_cast<M*>(e.payload());
    if (e.type() != typeid(shard_message<M>)) return nullptr;
    auto* d = std::get_if<deliver<M>>(static_cast<shard_message<M>*>(e.payload()));
    return d != nullptr ? &d->message : nullptr;
  }

  void receive(shard_message<M>& msg) {
    std::visit(overloaded{
                   [this](deliver<M>& d) {
                     deliver_to(d.entity_id, d.message, d.sent_at, /*pass_on=*/false);
                   },
                   [this](passivate<M>& p) { on_passivate(p); },
                   [this](passivate_entity& p) { on_passivate_entity(p.entity_id, p.cause); },
                   [this](shard_idle_check&) {
                     if (!entities_.empty()) return;
                     if (remember_pending()) {
                       arm_idle_check();  // an empty shard stops only once its ids are written
                       return;
                     }
                     setup_->report_idle(setup_->region, shard_idle{setup_->id, delivered_});
                   },
                   [this](get_entity_ids&) {
                     std::vector<std::string> ids;
                     ids.reserve(entities_.size());
                     for (const auto& e : entities_) ids.push_back(entity_id_of(e));
                     this->context().reply(std::move(ids));
                   },
                   [this](get_shard_stats&) { this->context().reply(stats()); },
                   [this](entity_idle_tick&) { on_idle_tick(); },
                   [this](hot_keys_tick&) { hot_.rotate(); },
                   [this](stop_entities&) { drain(); },
                   [this](remembered_listed& l) { on_listed(l); },
                   [this](remembered_written& w) { on_written(w); },
                   [this](remember_tick&) { on_remember_tick(); },
                   [this](keep_alive_tick&) { keep_alive(); },
                   [this](restart_entity& r) { on_restart(r.id); },
               },
               msg);
  }

  /// Stops the entities no delivery touched for three ticks: idle for between two and three
  /// tick intervals, i.e. between entity_idle and 1.5 x entity_idle. A tick that runs late
  /// passivates later, never earlier. The stamp costs a store per delivery, no clock read.
  void on_idle_tick() {
    ++epoch_;
    std::vector<actor_ref<M>> idle;
    for (const auto& entity : entities_) {
      // Modulo 256: an entity is passivated at age 3, so no age that matters wraps.
      const auto age = static_cast<std::uint8_t>(epoch_ - cell_of(entity).idle_stamp());
      if (age >= 3 && !stopping_.contains(std::string_view(entity_id_of(entity)))) {
        idle.push_back(entity);
      }
    }
    for (const auto& entity : idle) {
      on_passivate_entity(entity_id_of(entity), passivation_cause::idle);
    }
  }

  void turn_ended(std::size_t handled) noexcept override { stats_.batch_sizes.record(handled); }

  // Stopped with entities still stopping (its region stopped): what waited for their next
  // incarnations goes to dead letters.
  void post_stop() override {
    for (auto& [id, waiting] : stopping_) {
      for (auto& p : waiting) {
        to_dead_letters(std::move(p), errc::recipient_terminated,
                        "shard " + std::to_string(setup_->id) + " stopped while entity '" +
                            std::string(id) + "' stopped");
      }
    }
    stopping_.clear();
    for (auto& [id, waiting] : unwritten_) {
      for (auto& p : waiting) {
        to_dead_letters(std::move(p), errc::recipient_terminated,
                        "shard " + std::to_string(setup_->id) + " stopped before entity '" + id +
                            "' was remembered");
      }
    }
    unwritten_.clear();
    buffered_ = 0;
  }

  void pre_start() override {
    this->context().cell().set_child_entity_home(&setup_->home);
    arm_idle_check();
    if (setup_->entity_idle > duration::zero()) {
      this->timers().start_periodic("entity-idle", entity_idle_tick{}, setup_->entity_idle / 2);
    }
    // The hot-key window: ids counted over the last 30 to 60 seconds.
    this->timers().start_periodic("hot-keys", hot_keys_tick{}, std::chrono::seconds(30));
    if (setup_->memory) list_remembered();
    if (!setup_->keep_alive.empty()) {
      keep_alive();
      this->timers().start_periodic("keep-alive", keep_alive_tick{}, setup_->keep_alive_interval);
    }
  }

  /// Starts each entity that must always run and does not (unless the shard is leaving).
  void keep_alive() {
    if (draining_) return;
    for (const auto& id : setup_->keep_alive) {
      if (!entities_.contains(std::string_view(id)) && !unwritten_.contains(id)) {
        start(id, "kept alive", /*remembered=*/false);
      }
    }
  }

  // -- remember entities (docs/cluster.md, "Remember entities") --------------------------------

  void list_remembered() {
    setup_->memory->list(setup_->id, [self = this->context().self_ref()](
                                         std::error_code ec, std::vector<std::string> ids) {
      self.tell_any(shard_message<M>(std::in_place_type<remembered_listed>,
                                     remembered_listed{ec, std::move(ids)}));
    });
  }

  /// What the shard remembers starts, at the type's rate; an id a message started already is
  /// not started twice.
  void on_listed(remembered_listed& listed) {
    if (listed.error) {
      this->context().log().warn("shard {}: listing its remembered entities failed ({}); retrying",
                                 setup_->id, listed.error.message());
      listing_failed_ = true;
      arm_remember_tick(std::chrono::seconds(1));
      return;
    }
    for (auto& id : listed.ids) {
      if (!entities_.contains(std::string_view(id))) to_start_.push_back(std::move(id));
    }
    start_remembered();
  }

  void on_remember_tick() {
    remember_tick_armed_ = false;
    if (listing_failed_) {
      listing_failed_ = false;
      list_remembered();
    }
    start_remembered();
    write_remembered();
  }

  void arm_remember_tick(duration after) {
    if (remember_tick_armed_) return;
    remember_tick_armed_ = true;
    this->timers().start_single("remember", remember_tick{}, after);
  }

  void start_remembered() {
    if (draining_) to_start_.clear();  // the shard moves: its next owner starts them
    if (to_start_.empty()) return;
    std::size_t allowed = setup_->budget->take(to_start_.size(), this->context().clock().now());
    while (allowed > 0 && !to_start_.empty()) {
      const std::string id = std::move(to_start_.front());
      to_start_.pop_front();
      // One a message started, or whose messages wait for its id to be written, starts then.
      if (entities_.contains(std::string_view(id)) || unwritten_.contains(id)) continue;
      --allowed;
      start(id, "restarted from its shard's memory", /*remember=*/false);
    }
    if (!to_start_.empty()) arm_remember_tick(std::chrono::milliseconds(10));
  }

  /// Remembers (`add`) or forgets entity `id`: the last word for an id wins, written soon.
  void remember(const std::string& id, bool add) {
    if (!setup_->memory) return;
    changes_[id] = add;
    write_remembered();
  }

  [[nodiscard]] bool remember_pending() const noexcept { return writing_ || !changes_.empty(); }

  /// One write at a time, holding every change made while the previous one ran.
  void write_remembered() {
    if (writing_ || changes_.empty() || superseded_) return;
    std::vector<std::string> added;
    std::vector<std::string> removed;
    for (const auto& [id, add] : changes_) (add ? added : removed).push_back(id);
    in_flight_ = std::move(changes_);
    changes_.clear();
    writing_ = true;
    setup_->memory->update(
        setup_->id, setup_->epoch, std::move(added), std::move(removed),
        [self = this->context().self_ref()](std::error_code ec, bool superseded) {
          self.tell_any(shard_message<M>(std::in_place_type<remembered_written>,
                                         remembered_written{ec, superseded}));
        });
  }

  void on_written(const remembered_written& w) {
    writing_ = false;
    if (w.superseded) {
      // A newer owner of the shard wrote: this one's word no longer counts (it stops soon).
      this->context().log().warn("shard {}: its remembered entities are owned by a newer epoch",
                                 setup_->id);
      superseded_ = true;
      changes_.clear();
      drop_unwritten(superseded_reason());
    } else if (w.error) {
      this->context().log().warn("shard {}: writing its remembered entities failed ({}); retrying",
                                 setup_->id, w.error.message());
      for (auto& [id, add] : in_flight_) changes_.try_emplace(id, add);  // later words win
      in_flight_.clear();
      arm_remember_tick(std::chrono::seconds(1));
      return;
    }
    if (!w.superseded) {
      // Written: the entities whose messages waited for it start now, those messages first.
      for (const auto& [id, add] : in_flight_) {
        if (add) start_unwritten(id);
      }
    }
    in_flight_.clear();
    write_remembered();
    if (draining_ && entities_.empty()) stop_when_written();
  }

  /// With remember entities, a message for an entity that does not run waits until its id is
  /// written, and only then starts it: an entity never handles a message and then fails to
  /// start again after a crash because its id was not written yet. Its later messages wait
  /// behind it, in order.
  void hold_until_remembered(const std::string& id, M& message) {
    if (superseded_) {  // its ids are no longer this shard's to write
      reject(message, errc::recipient_terminated, superseded_reason());
      report_stopped(id);
      return;
    }
    auto [it, fresh] = unwritten_.try_emplace(id);
    buffer(it->second, id, message, "waits for its id to be remembered");
    if (it->second.empty()) {  // refused: the shard's buffer is full
      unwritten_.erase(it);
      report_stopped(id);
      return;
    }
    if (fresh) remember(id, true);
  }

  /// Entity `id`'s id is written: it starts with what waited for that.
  void start_unwritten(const std::string& id) {
    auto it = unwritten_.find(id);
    if (it == unwritten_.end()) return;
    std::vector<pending> waiting = std::move(it->second);
    unwritten_.erase(it);
    buffered_ -= waiting.size();
    hand_to_next(id, waiting, "started");
    // A moving shard still delivers what waited, then stops the entity like the others.
    if (draining_ && entities_.contains(std::string_view(id))) {
      on_passivate_entity(id, passivation_cause::shard_stopped);
    }
  }

  [[nodiscard]] std::string superseded_reason() const {
    return "a newer owner of shard " + std::to_string(setup_->id) +
           " remembers its entities: this one stops";
  }

  /// What waits for ids to be written goes to dead letters, with `why`.
  void drop_unwritten(const std::string& why) {
    for (auto& [id, waiting] : unwritten_) {
      buffered_ -= waiting.size();
      for (auto& p : waiting) to_dead_letters(std::move(p), errc::recipient_terminated, why);
      report_stopped(id);
    }
    unwritten_.clear();
  }

  /// A remembered entity that stopped without passivation starts again after the backoff, as
  /// Akka's entity-restart-backoff does.
  void restart_later(const std::string& id) {
    this->timers().start_single("restart " + id, restart_entity{id}, setup_->restart_backoff);
  }

  void on_restart(const std::string& id) {
    if (draining_ || superseded_ || entities_.contains(std::string_view(id)) ||
        unwritten_.contains(id)) {
      return;
    }
    if (auto c = changes_.find(id); c != changes_.end() && !c->second) return;  // passivated
    start(id, "restarted after it stopped", /*remembered=*/false);
  }

  /// A shard that moves stops once what it remembers is written: its next owner lists it.
  void stop_when_written() {
    if (!remember_pending() || superseded_) this->context().stop();
  }

  /// An empty shard asks its region, after its window, to be stopped.
  void arm_idle_check() {
    if (setup_->passivation_idle > duration::zero()) {
      this->timers().start_single("idle", shard_idle_check{}, setup_->passivation_idle);
    }
  }

  [[nodiscard]] shard_stats stats() const {
    shard_stats out = stats_;
    out.messages_processed = delivered_;
    out.entity_count = entities_.size();
    out.hottest = hot_.top(10);
    return out;
  }

  /// A message in its sender's envelope: the id comes from the message.
  void on_direct(M& message) {
    std::string id;
    try {
      id = setup_->extract_entity_id(message);
    } catch (...) {  // the sender's call did not throw: not a pure extractor
      ++delivered_;
      reject(message, errc::invalid_entity_id,
             "the entity-id extractor threw: " + describe_current_exception());
      return;
    }
    deliver_to(id, message, time_point{}, /*pass_on=*/true);
  }

  /// Hands `message` to entity `id`, starting it if none runs. `pass_on`: the message is in the
  /// envelope being handled, which goes on to the entity as it is.
  void deliver_to(const std::string& id, M& message, time_point sent_at, bool pass_on) {
    ++delivered_;
    observe(id, sent_at);
    if (setup_->extract_entity_message) {
      try {
        message = setup_->extract_entity_message(std::move(message));
      } catch (...) {
        const bool running = entities_.contains(std::string_view(id));
        reject(message, errc::invalid_entity_id,
               "cannot route entity '" + id + "': " + describe_current_exception());
        if (!running) report_stopped(id);  // the region's policy counted it
        return;
      }
    }
    if (!unwritten_.empty()) {
      if (auto u = unwritten_.find(id); u != unwritten_.end()) {
        buffer(u->second, id, message, "waits for its id to be remembered");
        return;
      }
    }
    auto it = entities_.find(std::string_view(id));
    if (it != entities_.end()) {
      if (!stopping_.empty()) {
        if (auto s = stopping_.find(id); s != stopping_.end()) {
          buffer(s->second, id, message, "stops");
          return;
        }
      }
      cell_of(*it).set_idle_stamp(epoch_);
      tell(*it, message, this->context().sender(), pass_on);
      return;
    }
    if (setup_->memory && !draining_) {
      hold_until_remembered(id, message);
      return;
    }
    const actor_ref<M>* started = start(id, "started");
    if (started == nullptr) {
      reject(message, start_failure_code_, start_failure_);
      return;
    }
    tell(*started, message, this->context().sender(), pass_on);
  }

  /// The last step of a delivery: `sender` may live in the envelope passed on.
  void tell(const actor_ref<M>& entity, M& message, const untyped_ref& sender, bool pass_on) {
    if (pass_on) {
      if (auto* e = this->context().cell().release_current()) {
        entity.target()->enqueue(e);
        return;
      }
    }
    entity.tell(std::move(message), sender);
  }

  /// Samples how long deliveries wait in the mailbox, how many wait behind them, and which
  /// ids are hot. 1 in 16: counting every message would cost more than delivering it. The
  /// wait goes to the system's registry too, when one is attached: the sample reads the clock
  /// anyway, so the histogram costs one more load and an add.
  void observe(const std::string& id, time_point sent_at) {
    if (sent_at != time_point{}) {
      const duration wait = this->context().clock().now() - sent_at;
      stats_.observe_queue_wait(wait);
      if (histogram* h = queue_wait_histogram()) {
        h->observe(std::chrono::duration<double>(wait).count());
      }
    }
    if ((delivered_ & 15U) == 0) {
      const std::uint64_t sent = setup_->sent.load(std::memory_order_relaxed);
      stats_.observe_mailbox_depth(sent > delivered_ ? sent - delivered_ : 0);
      hot_.record(id, 16);
    }
  }

  /// The queue-wait histogram of the registry attached to the system now (null: none), looked
  /// up again only when another registry is attached.
  histogram* queue_wait_histogram() {
    const auto* now = troupe::detail::instruments_of(&this->context().cell().system());
    if (now != instruments_seen_) {
      instruments_seen_ = now;
      queue_wait_ =
          now == nullptr ? nullptr : &shard_queue_wait(*now->registry, setup_->home.type_name);
    }
    return queue_wait_;
  }

  /// Keeps `message`, which lives in the envelope being handled, for the entity's next
  /// incarnation.
  void buffer(std::vector<pending>& to, const std::string& id, M& message, const char* while_it) {
    if (buffered_ >= setup_->buffer_size) {
      setup_->counts->count_overflow();
      reject(message, errc::mailbox_full,
             "shard buffer full while entity '" + id + "' " + while_it);
      return;
    }
    to.push_back({nullptr, &message});
    to.back().envelope.reset(this->context().cell().release_current());
    ++buffered_;
  }

  /// Starts an incarnation of entity `id` and returns its ref (in entities_); null when it
  /// cannot start (start_failure_ says why, and the region's policy hears of it).
  const actor_ref<M>* start(const std::string& id, const char* what, bool remembered = true) {
    // A node that no longer stands for the shard starts nothing: what an entity does as it
    // starts (timers, messages, reading its journal) would run while the shard may run elsewhere.
    if (setup_->home.standing != nullptr && setup_->home.standing->lost()) {
      start_failure_code_ = errc::recipient_terminated;
      start_failure_ = "entity '" + id + "' not " + what +
                       ": this node no longer stands for the entity's shard (its lease is gone "
                       "or in doubt)";
      report_stopped(id);
      return nullptr;
    }
    start_failure_code_ = errc::entity_start_failed;
    std::optional<actor_ref<M>> ref;
    try {
      // No name: the entity's cell keeps only its id and builds its name ("entity-<escaped
      // id>", entity_child_name) from it, with the scheme in its home, when asked.
      spawn_options options;
      options.with_unique_name();  // one incarnation per id at a time: this index says so
      // No home in the tag: the entity finds its home here, in its parent (8 bytes less each).
      options.with_entity(troupe::detail::entity_tag{id, nullptr});
      ref = setup_->spawn_entity(this->context(), std::move(options));
    } catch (...) {
      start_failure_ =
          "entity '" + id + "' could not be " + what + ": " + describe_current_exception();
      this->context().log().error("{}", start_failure_);
      report_stopped(id);
      return nullptr;
    }
    // The constructor runs inside the spawn: when it threw, the cell has no instance (it fails,
    // and this shard's supervision stops it; its failure is logged with the exception).
    if (static_cast<troupe::detail::actor_cell*>(ref->target())->instance() == nullptr) {
      start_failure_ = "entity '" + id + "' could not be " + what +
                       ": its constructor threw (the log has the exception)";
      report_stopped(id);
      return nullptr;
    }
    cell_of(*ref).set_idle_stamp(epoch_);
    auto [it, added] = entities_.insert(std::move(*ref));
    setup_->activations->fetch_add(1, std::memory_order_relaxed);
    if (remembered && !draining_) remember(id, true);
    if (setup_->report_started) {
      setup_->report_started(setup_->region, entity_started{setup_->id, id});
    }
    return &*it;
  }

  /// Tells the region's policy (with an LRU limit) that entity `id` does not run.
  void report_stopped(const std::string& id) {
    if (setup_->report_stopped) {
      setup_->report_stopped(setup_->region, entity_stopped{setup_->id, id});
    }
  }

  void on_passivate(passivate<M>& p) {
    if (!p.entity) return;
    auto it = entities_.find(std::string_view(entity_id_of(p.entity)));
    if (it == entities_.end() || it->target() != p.entity.target()) return;
    if (!stopping_.try_emplace(entity_id_of(*it)).second) return;  // already stopping
    setup_->counts->count_passivation(passivation_cause::requested);
    std::visit(overloaded{[&](poison_pill& pill) { it->tell(pill); },
                          [&](M& stop) { it->tell(std::move(stop)); }},
               p.stop_message);
  }

  /// The shard no longer lives here: each entity stops after its mailbox, then the shard. (Its
  /// route is shut, so nothing new arrives.)
  void drain() {
    draining_ = true;
    std::vector<std::string> ids;
    ids.reserve(entities_.size());
    for (const auto& e : entities_) ids.push_back(entity_id_of(e));
    for (const auto& id : ids) on_passivate_entity(id, passivation_cause::shard_stopped);
    to_start_.clear();
    if (entities_.empty()) stop_when_written();
  }

  void on_passivate_entity(const std::string& id, passivation_cause cause) {
    auto it = entities_.find(std::string_view(id));
    if (it == entities_.end()) {
      report_stopped(id);  // stopped before the request came: the region may not know yet
      return;
    }
    if (!stopping_.try_emplace(entity_id_of(*it)).second) return;
    setup_->counts->count_passivation(cause);
    // A poison pill, not a stop signal: messages already in the entity's mailbox are handled
    // first (a stop would overtake them). The entity's receive never sees it.
    it->tell(poison_pill{});
  }

  // The shard is the entities' parent: it hears of each stop without watching (a watch would
  // cost every entity a watcher list).
  void on_child_terminated(const untyped_ref& who) override {
    // `who` keeps the stopped cell, and with it the id we read, alive for this call.
    const std::string& id = entity_id_of(who);
    auto it = entities_.find(std::string_view(id));
    if (it == entities_.end() || it->target() != who.target()) return;
    std::vector<pending> waiting;
    bool passivated = false;
    if (auto s = stopping_.find(id); s != stopping_.end()) {
      waiting = std::move(s->second);
      stopping_.erase(s);
      passivated = true;
    }
    // Passivated, it is forgotten; stopped for a move, or after a failure, it is not, and
    // after a failure (or a stop of its own) it starts again after the backoff.
    if (passivated && !draining_) remember(id, false);
    if (!passivated && !draining_ && setup_->memory) restart_later(id);
    // Every stop is reported, and so is the next start: the region's policy (with an LRU limit)
    // follows what runs, whatever crossed the reports on the way.
    report_stopped(id);
    entities_.erase(it);
    buffered_ -= waiting.size();
    // Messages that waited for this incarnation to end go, in order, to the next one; with
    // remember entities, once its id is written again.
    if (!waiting.empty() && setup_->memory && !draining_) {
      auto& held = unwritten_[id];
      buffered_ += waiting.size();
      for (auto& p : waiting) held.push_back(std::move(p));
      remember(id, true);
    } else {
      hand_to_next(id, waiting, "restarted");
    }
    if (draining_) {
      // What waited for the next incarnation has been handed to it: it stops after that too.
      if (entities_.contains(std::string_view(id))) {
        on_passivate_entity(id, passivation_cause::shard_stopped);
      }
      if (entities_.empty()) stop_when_written();
      return;
    }
    if (entities_.empty()) arm_idle_check();
  }

  /// Hands what waited for entity `id` to its running incarnation, starting one if none runs,
  /// in order.
  void hand_to_next(const std::string& id, std::vector<pending>& waiting, const char* what) {
    for (auto& p : waiting) {
      auto next = entities_.find(std::string_view(id));
      const actor_ref<M>* entity =
          next != entities_.end() ? &*next : start(id, what, /*remembered=*/!setup_->memory);
      if (entity == nullptr) {
        to_dead_letters(std::move(p), start_failure_code_, start_failure_);
        continue;
      }
      try {
        if (p.envelope->type() == typeid(M)) {
          entity->target()->enqueue(p.envelope.release());  // the sender's own: as it is
        } else {
          entity->tell(std::move(*p.message), untyped_ref(p.envelope->sender));
        }
      } catch (...) {
        to_dead_letters(std::move(p), errc::message_copy_failed, copy_failure_reason());
      }
    }
  }

  /// Publishes `message`, which lives in the envelope being handled, as a dead letter (without
  /// moving it: its move may be what failed).
  void reject(M& message, errc code, std::string reason) {
    auto* e = this->context().cell().release_current();
    if (e == nullptr) return;  // passed on already
    to_dead_letters(pending{std::unique_ptr<troupe::detail::envelope_base>(e), &message}, code,
                    std::move(reason));
  }

  void to_dead_letters(pending p, errc code, std::string reason) noexcept {
    dead_letter_in_place(this->context().system().dead_letters(), std::move(p.envelope), *p.message,
                         this->context().path(), code, std::move(reason));
  }

  std::shared_ptr<shard_setup<M>> setup_;
  // The running entities; each cell keeps the idle tick of its last delivery (idle_stamp).
  boost::unordered_flat_set<actor_ref<M>, id_hash, id_equal> entities_;
  std::uint8_t epoch_ = 0;
  // Entities on their way out, with what arrived for their next incarnation. Keys view the ids
  // of the stopping cells, which entities_ keeps alive until they are erased together.
  std::unordered_map<std::string_view, std::vector<pending>, id_hasher> stopping_;
  // Remember entities: entities that do not run yet, with the messages that wait for their ids
  // to be written (in order) before they start.
  std::unordered_map<std::string, std::vector<pending>> unwritten_;
  std::size_t buffered_ = 0;
  bool draining_ = false;      // stop_entities came: the shard stops once its entities have
  std::string start_failure_;  // why the last start failed
  errc start_failure_code_ = errc::entity_start_failed;  // and its code
  std::uint64_t delivered_ = 0;
  // Remember entities: ids still to start, changes not yet written (id -> remembered), and
  // the write in flight.
  std::deque<std::string> to_start_;
  std::unordered_map<std::string, bool> changes_;
  std::unordered_map<std::string, bool> in_flight_;
  bool writing_ = false;
  bool superseded_ = false;
  bool listing_failed_ = false;
  bool remember_tick_armed_ = false;
  shard_stats stats_;
  hot_keys hot_{16};
  // The system's instruments last seen, and the histogram they gave (both owned elsewhere and
  // alive as long as the system).
  const troupe::detail::runtime_instruments* instruments_seen_ = nullptr;
  histogram* queue_wait_ = nullptr;
};

}  // namespace troupe::sharding::detail
