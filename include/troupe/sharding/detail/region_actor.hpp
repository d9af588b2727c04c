#pragma once
/// INTERNAL. A region: one per sharded type on this node. Owns its shards: starts each when its
/// route asks (shard_routes.hpp: senders deliver along it on their own threads), stops it when
/// it stands empty, and starts the next one when messages wait for it. It routes messages
/// itself only where no route serves: with an LRU limit (it then sees every message and decides
/// passivation for the whole node) and for custom shard ids beyond the shard count; what
/// arrives for a stopping shard it buffers and replays, in order, to the next shard actor.
///
/// Where a shard lives is its placement's answer (placement.hpp), asked before the region starts
/// a shard actor, whichever path the first message took: a shard with no home yet keeps its
/// messages (senders hold them in its route, the region in its buffer, both bounded by
/// buffer-size) until the placement reports a home. A shard that lives on another node gets
/// them from the region, in order, through the placement (send_remote); what other nodes'
/// regions send here arrives through the placement too, and is delivered only where the
/// placement says the shard lives now (docs/cluster.md, "Routing across nodes").

#include <troupe/core/actor.hpp>
#include <troupe/core/concurrency_gate.hpp>
#include <troupe/sharding/detail/back_pressure.hpp>
#include <troupe/sharding/detail/planted_bugs.hpp>
#include <troupe/sharding/detail/shard_actor.hpp>
#include <troupe/sharding/detail/shard_routes.hpp>
#include <troupe/sharding/detail/undelivered.hpp>
#include <troupe/sharding/entity_path.hpp>
#include <troupe/sharding/messages.hpp>
#include <troupe/sharding/passivation_policy.hpp>
#include <troupe/sharding/placement.hpp>
#include <troupe/sharding/shard_id.hpp>
#include <troupe/sharding/sharding_options.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace troupe::sharding::detail {

/// A question for one shard, sent through the region (shard_ref_for): the ref stays valid while
/// the shard actor passivates and comes back.
struct shard_query {
  shard_id shard = 0;
  std::variant<get_entity_ids, get_shard_stats> query;
};

/// The placement reports that a shard's home changed (placement::home_listener).
struct home_changed {
  shard_id shard = 0;
};

/// A message another node's region sent to an entity of a shard it placed here at `epoch`.
/// `counted`: it is counted in its route's arrivals_in_region (see pass_arrival).
template <class M>
struct arrived {
  shard_id shard = 0;
  shard_epoch epoch = 0;
  std::string entity_id;
  M message;
  bool counted = false;
  origin_stamp stamp;  // where it first left its sender's node
};

/// A flush marker another node's region sent here behind its messages for a shard
/// (placement::send_flush): answer `reply_to` where they are delivered, or pass it on behind them.
struct flush_arrived {
  shard_id shard = 0;
  shard_epoch epoch = 0;
  std::uint64_t token = 0;
  untyped_ref reply_to;
  std::string origin;  // the node whose marker it is
};

/// This region's own flush of a shard ended (answered, or its old home is gone).
struct flush_done {
  shard_id shard = 0;
  std::uint64_t token = 0;
};

/// The shards the type's memory remembers entities of (remember entities), or why not.
struct remembered_shards {
  std::error_code error;
  std::vector<shard_id> shards;
};
/// The region's own timer: list the remembered shards again after a failure.
struct relist_remembered {};

template <class M>
using region_message =
    std::variant<M, routed<M>, start_shard, route_full<M>, entity_stopped, entity_started,
                 passivation_tick, get_region_state, shard_idle, shard_query, home_changed,
                 arrived<M>, flush_arrived, flush_done, remembered_shards, relist_remembered>;

/// Everything a region runs with.
template <class M>
struct region_setup {
  region_settings settings;
  entity_spawner<M> spawn_entity;
  entity_id_extractor<M> extract_entity_id;
  std::function<M(M)> extract_entity_message;
  std::function<shard_id(const std::string&)> extract_shard_id;
  /// Caps how many entities are inside a coroutine handler at once (null: no cap).
  std::shared_ptr<concurrency_gate> gate;
  /// The shards' direct routes, shared with the senders.
  std::shared_ptr<shard_routes<M>> routes;
  /// Each shard's credit, with a shard capacity (null: no back-pressure).
  std::shared_ptr<credit_table> credits;
  /// Where each shard lives (single_node_placement without a cluster).
  std::shared_ptr<troupe::sharding::placement> homes;
  /// Remember entities (null: off), and how fast the shards start what they remember.
  std::shared_ptr<remembered_entities> memory;
  std::shared_ptr<start_budget> budget;
  /// The entities of each shard that always run (null: none), and how often a shard checks.
  std::function<std::vector<std::string>(shard_id)> keep_alive;
  duration keep_alive_interval = std::chrono::seconds(5);
  /// What the region and its shards count for region_state (passivations, overflows).
  std::shared_ptr<region_counts> counts = std::make_shared<region_counts>();
};

template <class M>
class region_actor final : public actor<region_message<M>> {
 public:
  explicit region_actor(std::shared_ptr<const region_setup<M>> setup)
      : setup_(std::move(setup)),
        policy_(passivation_settings{setup_->settings.passivation_idle,
                                     setup_->settings.max_entities}) {}

 private:
  // A message that waits for the next shard actor, in the envelope it came in (not moved); or
  // (message null) another node's flush marker, which waits in line with the messages.
  struct pending {
    std::string entity_id;
    std::unique_ptr<troupe::detail::envelope_base> envelope;
    M* message;
    // A message from another node goes on only to a home newer than the one it was sent to.
    shard_epoch sent_at_epoch = 0;
    std::uint64_t flush_token = 0;
    untyped_ref reply_to;
    std::string origin;  // a marker's: the node whose marker it is
    origin_stamp stamp;  // a message from another node: where it first left its sender's node
  };
  struct shard_entry {
    // The route's shard and setup fields are the running shard actor's: only this region
    // writes them (under the lock), so it reads them without.
    shard_route<M>* route = nullptr;
    std::unique_ptr<shard_route<M>> own_route;  // for ids beyond the routes table
    bool stopping = false;
    bool stopped_now = false;    // told to stop at once (the node fenced itself)
    bool start_wanted = false;   // start it once it lives here (remember entities)
    shard_epoch epoch = 0;       // the allocation's epoch the shard actor runs at
    std::deque<pending> buffer;  // arrived while the shard actor stops or has no home
    // The remote home this region last sent the shard's messages to. When the shard's home is
    // no longer that one, nothing goes to the new home until a flush marker sent behind them
    // comes back (`flushing` names it): so a message the old home passes on never arrives
    // after a newer one.
    std::optional<placed_remote> sent_to;
    std::uint64_t flushing = 0;
    // This flush handed what waited to its old home once (it does so at most once: a marker
    // of that node that comes back with it must not start a second round).
    bool yielded = false;
    // What this node's senders sent while the flush ran: it goes after what other nodes pass
    // on meanwhile (which may be this region's own earlier messages, passed back).
    std::deque<pending> during_flush;
  };

  // With an LRU limit the region keeps the order of every entity on the node (a policy touch
  // per message); without one, each shard passivates its own idle entities with a stamp per
  // delivery, and the region's routing stays free of it.
  [[nodiscard]] bool keeps_order() const noexcept { return setup_->settings.max_entities > 0; }

  void pre_start() override {
    const duration idle = setup_->settings.passivation_idle;
    if (idle > duration::zero() && keeps_order()) {
      // Checked twice per window: an idle entity stops between idle and 1.5 x idle.
      this->timers().start_periodic("passivation", passivation_tick{}, idle / 2);
    }
    // After a restart (post_stop closed every route, and the shards stopped with the old
    // instance) the routes serve again, from scratch.
    setup_->routes->for_each([](shard_id, shard_route<M>& route) {
      std::lock_guard lock(route.lock);
      if (route.state == route_state::closed) route.state = route_state::idle;
    });
    setup_->homes->set_listener([region = this->context().self_ref()](shard_id shard) {
      region.tell_any(region_message<M>(std::in_place_type<home_changed>, home_changed{shard}));
    });
    setup_->homes->set_delivery_counter([routes = std::weak_ptr(setup_->routes)] {
      std::vector<std::pair<shard_id, std::uint64_t>> counts;
      if (auto r = routes.lock()) {
        r->for_each([&counts](shard_id shard, shard_route<M>& route) {
          std::lock_guard lock(route.lock);
          if (route.messages != 0) counts.emplace_back(shard, route.messages);
        });
      }
      return counts;
    });
    setup_->homes->set_arrival_handler(
        [region = this->context().self_ref(), office = &this->context().system().dead_letters(),
         path = this->context().path(),
         setup = setup_](remote_arrival& a) { pass_arrival(region, *office, path, *setup, a); });
    if (starts_unasked()) {
      // Every shard placed here starts, asked or not, and so does each one that remembers
      // entities or keeps some alive and lives here (after a restart of this node, or of the
      // whole cluster).
      setup_->homes->track_hosted_shards();
    }
    if (setup_->memory) list_remembered_shards();
    if (setup_->keep_alive) {
      for (shard_id shard = 0; shard < setup_->settings.num_shards; ++shard) {
        if (!setup_->keep_alive(shard).empty()) start_remembering(shard, entry_of(shard));
      }
    }
  }

  /// Whether a shard starts here as soon as it is placed here, without waiting for a message.
  [[nodiscard]] bool starts_unasked() const noexcept {
    return setup_->memory != nullptr || static_cast<bool>(setup_->keep_alive);
  }
  [[nodiscard]] bool starts_unasked(shard_id shard) const noexcept {
    return starts_unasked() && shard < setup_->settings.num_shards;
  }

  void list_remembered_shards() {
    setup_->memory->list_shards(
        [region = this->context().self_ref()](std::error_code ec, std::vector<shard_id> shards) {
          region.tell_any(region_message<M>(std::in_place_type<remembered_shards>,
                                            remembered_shards{ec, std::move(shards)}));
        });
  }

  void on_remembered_shards(remembered_shards& r) {
    if (r.error) {
      this->context().log().warn("region {}: listing its remembered shards failed ({}); retrying",
                                 setup_->settings.type_name, r.error.message());
      this->timers().start_single("remembered-shards", relist_remembered{},
                                  std::chrono::seconds(1));
      return;
    }
    for (shard_id shard : r.shards) {
      if (shard >= setup_->settings.num_shards) continue;  // the type has fewer shards now
      start_remembering(shard, entry_of(shard));
    }
  }

  /// Starts the shard if it lives here, without waiting for a message (remember entities).
  void start_remembering(shard_id shard, shard_entry& entry) {
    entry.start_wanted = true;
    if (!entry.stopping) settle(shard, entry);
  }

  /// Hands the region a message another node sent (on the placement's thread): a payload of
  /// another type than M (the nodes disagree on the type's message) is a dead letter.
  static void pass_arrival(const untyped_ref& region, dead_letter_office& office,
                           const std::string& path, const region_setup<M>& setup,
                           remote_arrival& a) noexcept {
    const std::string& type = setup.settings.type_name;
    if (a.flush_token != 0) {
      try {
        if (a.flushed) {
          region.tell_any(region_message<M>(std::in_place_type<flush_done>,
                                            flush_done{a.shard, a.flush_token}));
        } else {
          region.tell_any(
              region_message<M>(std::in_place_type<flush_arrived>,
                                flush_arrived{a.shard, a.epoch, a.flush_token,
                                              std::move(a.reply_to), std::move(a.origin)}));
        }
      } catch (...) {
        // Out of memory: the marker's sender gives up on it after its flush timeout.
      }
      return;
    }
    std::unique_ptr<troupe::detail::envelope_base> in = std::move(a.message);
    if (!in) return;
    if (in->type() != typeid(M)) {
      office.publish(in.release(), path, make_error_code(errc::bad_reply_type),
                     "region " + type + ": another node sent a message of another type");
      return;
    }
    M& message = *static_cast<M*>(in->payload());
    shard_route<M>* route = nullptr;
    try {
      route = route_of_arrival(setup, a);
      if (route != nullptr && deliver_arrival(*route, a, in)) return;
      auto* e = new troupe::detail::envelope<region_message<M>>(
          std::in_place_type<arrived<M>>,
          arrived<M>{a.shard, a.epoch, std::move(a.entity_id), std::move(message), false, a.stamp});
      e->sender = std::move(in->sender);
      if (route != nullptr) {
        // Counted under the lock that opens the route: no later arrival for the shard goes
        // straight to its actor until the region has routed this one.
        std::lock_guard lock(route->lock);
        std::get<arrived<M>>(e->value).counted = true;
        ++route->arrivals_in_region;
      }
      region.target()->enqueue_any(e);
    } catch (...) {
      dead_letter_in_place(office, std::move(in), message, path, errc::message_copy_failed,
                           "region " + type + ": " + copy_failure_reason());
    }
  }

  /// The direct route an arrival may take to its shard's running actor: a region whose
  /// senders route directly, a node not fenced, an entity id that maps to the shard the sender
  /// named. Null (the region routes it, and says why it refuses one) otherwise.
  static shard_route<M>* route_of_arrival(const region_setup<M>& setup, const remote_arrival& a) {
    if (!setup.routes->direct() || a.entity_id.empty() || setup.homes->fenced()) return nullptr;
    shard_id shard = 0;
    try {
      shard = setup.extract_shard_id ? setup.extract_shard_id(a.entity_id)
                                     : shard_of(a.entity_id, setup.settings.num_shards);
    } catch (...) {
      return nullptr;
    }
    return shard == a.shard ? setup.routes->at(shard) : nullptr;
  }

  /// Delivers an arrival straight to its shard's actor, as a local sender would, when the route
  /// is open and no earlier arrival for the shard still waits in the region's mailbox (it would
  /// be overtaken). The region delivers to a running shard whatever epoch the sender saw, so
  /// this does too; an entity checks the node's fence itself. False, leaving the message in
  /// `in`, when it must go through the region.
  static bool deliver_arrival(shard_route<M>& route, remote_arrival& a,
                              std::unique_ptr<troupe::detail::envelope_base>& in) {
    {
      std::lock_guard lock(route.lock);
      if (route.state != route_state::open || route.arrivals_in_region != 0) return false;
    }
    // Built outside the lock, then checked again: the message moves into it and back if the
    // route changed meanwhile.
    M& message = *static_cast<M*>(in->payload());
    std::unique_ptr<troupe::detail::envelope<shard_message<M>>> d(
        new troupe::detail::envelope<shard_message<M>>(std::in_place_type<deliver<M>>,
                                                       std::move(a.entity_id), std::move(message),
                                                       time_point{}));
    d->sender = in->sender;
    {
      std::lock_guard lock(route.lock);
      if (route.state == route_state::open && route.arrivals_in_region == 0) {
        route.deliver_locked(d.release());
        in.reset();
        return true;
      }
    }
    auto& back = std::get<deliver<M>>(d->value);
    message = std::move(back.message);
    a.entity_id = std::move(back.entity_id);
    return false;
  }

  // Senders holding refs may outlive the region: they find every route closed (and send here,
  // to dead letters); what routes held goes to dead letters now.
  void post_stop() override {
    setup_->homes->set_listener({});  // it held a ref to this region
    setup_->homes->set_arrival_handler({});
    setup_->homes->set_delivery_counter({});
    auto close = [this](shard_id, shard_route<M>& route) {
      troupe::detail::mpsc_node* held = nullptr;
      {
        std::lock_guard lock(route.lock);
        route.state = route_state::closed;
        route.shard = {};
        route.setup = {};
        route.remote.reset();
        held = route.take_held_locked();
      }
      shard_route<M>::for_each(held, [this](troupe::detail::envelope_base* e) {
        dead_letter_from(this->context(), e, errc::mailbox_full,
                         "region " + setup_->settings.type_name + " stopped");
      });
    };
    setup_->routes->for_each(close);
    for (auto& [shard, entry] : shards_) {
      if (entry.own_route) close(shard, *entry.own_route);
      // What waited here for a stopping shard goes to dead letters too.
      for (auto* line : {&entry.buffer, &entry.during_flush}) {
        for (auto& p : *line) {
          if (p.message == nullptr) continue;  // a flush marker: its sender's timeout ends it
          dead_letter_in_place(this->context().system().dead_letters(), std::move(p.envelope),
                               *p.message, this->context().path(), errc::mailbox_full,
                               "region " + setup_->settings.type_name + " stopped");
        }
        line->clear();
      }
    }
    buffered_ = 0;
  }

  void receive(region_message<M>& msg) override {
    std::visit(
        overloaded{
            [this](M& m) { contained(m, [&] { route_extracting(m); }); },
            [this](routed<M>& r) { contained(r.message, [&] { route(r.entity_id, r.message); }); },
            [this](start_shard& s) { on_start_shard(s.shard); },
            [this](route_full<M>& f) {
              if (!f.over_capacity) setup_->counts->count_overflow();
              reject(f.message,
                     "shard " + std::to_string(f.shard) +
                         (f.over_capacity ? " has shard-capacity messages in flight already"
                                          : " holds buffer-size messages already while it starts "
                                            "(or waits for a home) or stops"),
                     errc::mailbox_full);
            },
            [this](entity_stopped& s) {
              policy_.entity_stopped(entity_key_view(s.shard, s.entity_id));
            },
            [this](entity_started& s) {
              for (auto& victim : policy_.entity_started(entity_key_view(s.shard, s.entity_id),
                                                         this->context().clock().now())) {
                passivate(victim, passivation_cause::max_entities);
              }
            },
            [this](passivation_tick&) { on_tick(); },
            [this](get_region_state&) { this->context().reply(state()); },
            [this](shard_idle& idle) { on_shard_idle(idle); },
            [this](shard_query& q) { on_shard_query(q); },
            [this](home_changed& h) { on_home_changed(h.shard); },
            [this](arrived<M>& a) { contained(a.message, [&] { on_arrival(a); }); },
            [this](flush_arrived& f) { on_flush_arrived(f); },
            [this](flush_done& f) { on_flush_done(f); },
            [this](remembered_shards& r) { on_remembered_shards(r); },
            [this](relist_remembered&) { list_remembered_shards(); },
        },
        msg);
  }

  /// Runs `route` for `message`, which lives in the envelope being handled: when the message
  /// cannot be moved on (its copy or move constructor throws), it becomes a dead letter from
  /// that envelope, and the region goes on.
  template <class F>
  void contained(M& message, F&& route) {
    try {
      route();
    } catch (...) {
      if (auto* e = this->context().cell().release_current()) {
        dead_letter_in_place(this->context().system().dead_letters(),
                             std::unique_ptr<troupe::detail::envelope_base>(e), message,
                             this->context().path(), errc::message_copy_failed,
                             "region " + setup_->settings.type_name + ": " + copy_failure_reason());
      }
    }
  }

  // Messages are routed in place (they live in the envelope until the handler returns) and
  // moved once, into the delivery.
  void route_extracting(M& message) {
    std::string id;
    try {
      if (!setup_->extract_entity_id) {
        reject(message, "type '" + setup_->settings.type_name +
                            "' was started without an entity-id extractor");
        return;
      }
      id = setup_->extract_entity_id(message);
    } catch (...) {
      reject(message, "the entity-id extractor threw: " + describe_current_exception());
      return;
    }
    route(id, message);
  }

  void route(std::string& id, M& message) {
    if (id.empty()) {
      reject(message, "empty entity id");
      return;
    }
    shard_id shard;
    try {
      shard = setup_->extract_shard_id ? setup_->extract_shard_id(id)
                                       : shard_of(id, setup_->settings.num_shards);
    } catch (...) {
      reject(message, "cannot route entity '" + id + "': " + describe_current_exception());
      return;
    }
    // Only messages that come through sharding count as an entity's activity.
    if (keeps_order()) {
      for (auto& victim :
           policy_.entity_touched(entity_key_view(shard, id), this->context().clock().now())) {
        passivate(victim, passivation_cause::max_entities);
      }
    }
    route_to(shard, id, message, 0);
  }

  /// A message another node's region sent here for a shard it placed here at `a.epoch`: the
  /// nodes must agree on the entity's shard. It goes where this node's placement says the shard
  /// lives now: here once its fence stands, on to a newer remote home, else it waits here.
  void on_arrival(arrived<M>& a) {
    // However it ends, the next arrival for the shard may go straight to its actor after it.
    struct uncount {
      shard_route<M>* route;
      ~uncount() {
        if (route == nullptr) return;
        std::lock_guard lock(route->lock);
        --route->arrivals_in_region;
      }
    } done{a.counted ? setup_->routes->at(a.shard) : nullptr};
    shard_id shard = 0;
    try {
      shard = a.entity_id.empty()        ? a.shard
              : setup_->extract_shard_id ? setup_->extract_shard_id(a.entity_id)
                                         : shard_of(a.entity_id, setup_->settings.num_shards);
    } catch (...) {
      reject(a.message, "cannot route entity '" + a.entity_id +
                            "' from another node: " + describe_current_exception());
      return;
    }
    if (a.entity_id.empty() || shard != a.shard) {
      reject(a.message, "another node routed entity '" + a.entity_id + "' to shard " +
                            std::to_string(a.shard) + ", this node to shard " +
                            std::to_string(shard) +
                            ": every node needs the same num-shards and shard-id extractor");
      return;
    }
    if (keeps_order()) {
      for (auto& victim : policy_.entity_touched(entity_key_view(shard, a.entity_id),
                                                 this->context().clock().now())) {
        passivate(victim, passivation_cause::max_entities);
      }
    }
    route_to(shard, a.entity_id, a.message, a.epoch, a.stamp);
  }

  /// Delivers `message` (in the envelope being handled) to entity `id` of `shard` where the
  /// shard lives, or keeps it waiting. `sent_at_epoch` > 0: another node sent it here at that
  /// epoch, and it goes on only to a newer remote home (epochs only grow, so it never circles),
  /// with its `stamp`.
  void route_to(shard_id shard, std::string& id, M& message, shard_epoch sent_at_epoch,
                const origin_stamp& stamp = {}) {
    // A node that fenced itself delivers nothing, and the other nodes refuse its ended run.
    // Past the lease's deadline already (a node resumed after a pause, before its fence is
    // noticed): the shard may run elsewhere and its senders count what they sent here as lost,
    // so passing it on now would put it after their newer messages.
    if (setup_->homes->fenced() || (sent_at_epoch > 0 && setup_->homes->standing()->lapsed())) {
      reject(message, fenced_reason(), errc::recipient_terminated);
      return;
    }
    auto& entry = entry_of(shard);
    std::optional<placed_remote> behind_waiting;  // the home it goes to behind what waits
    if (!entry.stopping && entry.flushing == 0) {
      if (entry.route->shard) {
        // 1 in 16 carries its send time, which the shard's queue-wait figure samples.
        time_point sent_at{};
        if ((++sampled_ & 15U) == 0) sent_at = this->context().clock().now();
        send(shard, entry, std::move(id), message, this->context().sender(), sent_at);
        return;
      }
      const shard_home home = home_of(shard, entry);
      if (!flush_if_moved(shard, entry, home)) {
        if (std::holds_alternative<placed_here>(home)) {
          // The shard starts with what waited (the placement may answer here before its
          // listener's news), then this message.
          send(shard, entry, std::move(id), message, this->context().sender());
          return;
        }
        if (const auto* remote = std::get_if<placed_remote>(&home);
            remote != nullptr && remote->epoch > sent_at_epoch && setup_->homes->routes_remote()) {
          if (entry.buffer.empty()) {
            if (auto failure = send_remote(*remote, shard, entry, id, message,
                                           this->context().sender(), stamp)) {
              reject(message, std::move(failure->why), failure->code);
            }
            return;
          }
          // Messages that waited for a home (another node's, held while the shard moved) may
          // be its sender's earlier ones: it goes behind them, all of them in order (the news
          // of the home may reach the placement before it reaches this region).
          behind_waiting = *remote;
        }
      }
    }
    if (buffered_ >= setup_->settings.buffer_size) {
      setup_->counts->count_overflow();
      reject(message,
             "region buffer full while shard " + std::to_string(shard) +
                 (entry.stopping ? " stops" : " waits for a home"),
             errc::mailbox_full);
      return;
    }
    // The message waits in its own envelope, with its sender: nothing moves.
    auto& line = entry.flushing != 0 && sent_at_epoch == 0 ? entry.during_flush : entry.buffer;
    if (sent_at_epoch > 0 && planted::bounced_out_of_order.load(std::memory_order_relaxed)) {
      line.push_front({std::move(id), nullptr, &message, sent_at_epoch, 0, {}, {}, stamp});
      line.front().envelope.reset(this->context().cell().release_current());
    } else {
      line.push_back({std::move(id), nullptr, &message, sent_at_epoch, 0, {}, {}, stamp});
      line.back().envelope.reset(this->context().cell().release_current());
    }
    ++buffered_;
    if (behind_waiting) send_waiting(shard, entry, *behind_waiting);
  }

  /// Sends `message` to the shard's remote home; when it cannot go, why not, with its code
  /// (the placement's, such as a node that left, when its exception carries one).
  std::optional<send_failure> send_remote(const placed_remote& home, shard_id shard,
                                          shard_entry& entry, const std::string& id,
                                          const M& message, const untyped_ref& sender,
                                          const origin_stamp& stamp) {
    try {
      setup_->homes->send_remote(home, shard, id, &message, sender, stamp);
      entry.sent_to = home;
      return std::nullopt;
    } catch (...) {
      return current_send_failure(home.node);
    }
  }

  /// Whether the shard's messages must wait for a flush: this region sent some to a remote home
  /// that is not the shard's home any more. Starts the flush (a marker behind them, to that
  /// home) unless one runs already. An old home that is no member any more gets none (no
  /// marker can reach it): the placement starts a new round instead (flush_abandoned), so what
  /// it still passes on after leaving, or this node's queue to it still holds, cannot follow
  /// newer messages where those went.
  bool flush_if_moved(shard_id shard, shard_entry& entry, const shard_home& home) {
    if (entry.flushing != 0) return true;
    if (!entry.sent_to) return false;
    if (const auto* remote = std::get_if<placed_remote>(&home);
        remote != nullptr && *remote == *entry.sent_to) {
      return false;
    }
    close_remote(entry);  // before the marker: senders' messages must not follow it
    if (planted::skip_flush_before_handoff.load(std::memory_order_relaxed)) {
      entry.sent_to.reset();
      return false;
    }
    const std::uint64_t token = send_own_marker(*entry.sent_to, shard);
    if (token == 0) {
      entry.sent_to.reset();
      return false;
    }
    entry.flushing = token;
    yield_if_flushes_wait_for_each_other(shard, entry);  // may end it (its old home is gone)
    return entry.flushing != 0;
  }

  /// Sends a flush marker of this region's own to `home`: its token, or 0 when it cannot go
  /// (the placement does not flush, or `home`'s node is no member any more). Then the caller
  /// sends on without waiting, so the placement starts the shard's next round first
  /// (placement::flush_abandoned).
  std::uint64_t send_own_marker(const placed_remote& home, shard_id shard) {
    const std::uint64_t token = ++flush_tokens_;
    bool sent = false;
    try {
      sent = setup_->homes->send_flush(home, shard, token, untyped_ref{}, {});
    } catch (...) {
    }
    if (sent) return token;
    setup_->homes->flush_abandoned(shard);
    return 0;
  }

  /// This region's flush of a shard ended: what waited for it goes where the shard lives now.
  void on_flush_done(const flush_done& f) {
    auto it = shards_.find(f.shard);
    if (it == shards_.end() || it->second.flushing != f.token) return;
    end_flush(f.shard, it->second);
  }

  /// What this node's senders sent during the flush (held in the route, or waiting in the region)
  /// goes after what other nodes passed on meanwhile, then everything where the shard lives.
  void end_flush(shard_id shard, shard_entry& entry) {
    entry.flushing = 0;
    entry.yielded = false;
    entry.sent_to.reset();
    buffer_held(entry);
    for (auto& p : entry.during_flush) entry.buffer.push_back(std::move(p));
    entry.during_flush.clear();
    settle(shard, entry);
  }

  /// Moves what senders hold in the shard's route to the end of the buffer. What the buffer
  /// holds came first (a sender's earlier messages may wait there, after a flush), so whatever
  /// takes the buffer takes the route's messages behind it, never before. With `idle`, a
  /// starting route goes back to idle under the same lock, so the next sender asks the region
  /// again (a message held after the take but before the state changed would wait unasked).
  void buffer_held(shard_entry& entry, bool idle = false) {
    troupe::detail::mpsc_node* held = nullptr;
    {
      std::lock_guard lock(entry.route->lock);
      held = entry.route->take_held_locked();
      if (idle && entry.route->state == route_state::starting) {
        entry.route->state = route_state::idle;
      }
    }
    shard_route<M>::for_each(held, [&](troupe::detail::envelope_base* e) {
      std::unique_ptr<troupe::detail::envelope_base> owned(e);
      std::string id;
      M* message = nullptr;
      try {
        message = message_of(*owned, id);
        entry.buffer.push_back({std::move(id), std::move(owned), message, 0, 0, {}, {}, {}});
        ++buffered_;
      } catch (...) {
        dead_letter_from(
            this->context(), owned.release(),
            message != nullptr ? errc::message_copy_failed : errc::invalid_entity_id,
            "region " + setup_->settings.type_name + ": " + describe_current_exception());
      }
    });
  }

  /// Another node's flush marker: it follows that node's earlier messages for the shard, which
  /// went into the running shard here, or went on to a newer home, or wait here. So it is
  /// answered now, goes on behind them, or waits behind them.
  void on_flush_arrived(flush_arrived& f) {
    auto& entry = entry_of(f.shard);
    if (entry.flushing == f.token) {
      // Its own marker, passed back here by the old home (the shard moved here, or on through
      // here): what the old home held came before it and waits in the buffer, in order.
      end_flush(f.shard, entry);
      return;
    }
    if (setup_->homes->standing()->lapsed()) {  // it passes on nothing that came before it
      setup_->homes->answer_flush(f.reply_to, f.shard, f.token);
      return;
    }
    if (!entry.stopping && entry.flushing == 0 && entry.buffer.empty()) {
      if (entry.route->shard) {
        setup_->homes->answer_flush(f.reply_to, f.shard, f.token);
        return;
      }
      const shard_home home = home_of(f.shard, entry);
      if (!flush_if_moved(f.shard, entry, home)) {
        if (std::holds_alternative<placed_here>(home)) {
          setup_->homes->answer_flush(f.reply_to, f.shard, f.token);
          if (entry.start_wanted) settle(f.shard, entry);  // this answer may be its only news
          return;
        }
        if (const auto* remote = std::get_if<placed_remote>(&home);
            remote != nullptr && remote->epoch > f.epoch && setup_->homes->routes_remote()) {
          pass_flush(*remote, f.shard, f.token, f.reply_to, f.origin);
          return;
        }
      }
    }
    entry.buffer.push_back(
        {std::string(), nullptr, nullptr, f.epoch, f.token, f.reply_to, std::move(f.origin), {}});
    ++buffered_;
    yield_if_flushes_wait_for_each_other(f.shard, entry);
  }

  /// Passes another node's flush marker on to `home`, behind the messages sent there. When it
  /// cannot go, its sender ends the flush by its timeout.
  void pass_flush(const placed_remote& home, shard_id shard, std::uint64_t token,
                  const untyped_ref& reply_to, const std::string& origin) {
    try {
      (void)setup_->homes->send_flush(home, shard, token, reply_to, origin);
    } catch (...) {
      // Its node is no member any more, or the marker cannot be encoded: the flush's sender
      // ends it by its timeout or when that node's key is gone.
    }
  }

  /// On a node that fenced itself nothing waits: what other nodes sent here may have missed
  /// moves, and passed on late it could overtake newer messages (docs/cluster.md, "Order across
  /// a move"); what this node's senders sent has no home to go to (this node hosts nothing more,
  /// and the others refuse its ended run). Every message goes to dead letters with the reason,
  /// other nodes' flush markers are answered, this region's own flush ends, and senders come to
  /// the region again, which refuses what they send. True if it fenced itself.
  bool drop_waiting_if_fenced(shard_id shard, shard_entry& entry) {
    if (!setup_->homes->fenced()) return false;
    close_remote(entry);
    buffer_held(entry, true);
    for (auto* line : {&entry.buffer, &entry.during_flush}) {
      for (auto& p : *line) {
        --buffered_;
        if (p.message == nullptr) {
          setup_->homes->answer_flush(p.reply_to, shard, p.flush_token);
          continue;
        }
        dead_letter_in_place(this->context().system().dead_letters(), std::move(p.envelope),
                             *p.message, this->context().path(), errc::recipient_terminated,
                             fenced_reason());
      }
      line->clear();
    }
    entry.flushing = 0;
    entry.yielded = false;
    entry.sent_to.reset();
    return true;
  }

  [[nodiscard]] std::string fenced_reason() const {
    return "region " + setup_->settings.type_name +
           ": this node fenced itself (or is past its lease's deadline): it delivers nothing "
           "here and sends nothing on";
  }

  /// A route holds messages for a shard with no actor: start one where the shard lives, or
  /// send them to its remote home (unless the current actor is still stopping: what waits goes
  /// on when it is gone).
  void on_start_shard(shard_id shard) { settle(shard, entry_of(shard)); }

  /// The placement's answer for a shard with no running actor; placed_here keeps its epoch for
  /// the actor about to start. Asking also starts the search for a home.
  shard_home home_of(shard_id shard, shard_entry& entry) {
    shard_home home = setup_->homes->home_of(shard);
    if (const auto* here = std::get_if<placed_here>(&home)) {
      entry.epoch = here->epoch;
      // The placement tells the region of a new home only when it differs from the last answer
      // it gave: a shard that starts unasked starts on this answer, whichever path asked.
      if (starts_unasked(shard)) entry.start_wanted = true;
    }
    return home;
  }

  /// The placement has news of a shard: if it runs here but no longer lives here at its epoch
  /// (the node left, or the shard was allocated again), drain and stop it (what arrives
  /// meanwhile waits, in order, for the shard's next home); if the node fenced itself, stop it
  /// at once, also when it drains already. Else settle it.
  void on_home_changed(shard_id shard) {
    auto it = shards_.find(shard);
    if (it == shards_.end()) {
      if (starts_unasked(shard) &&
          std::holds_alternative<placed_here>(setup_->homes->home_of(shard))) {
        start_remembering(shard, entry_of(shard));
        return;
      }
      report_released(shard, nullptr);
      return;
    }
    shard_entry& entry = it->second;
    if (entry.route->shard) {
      const shard_home home = setup_->homes->home_of(shard);
      const auto* here = std::get_if<placed_here>(&home);
      if (here != nullptr && here->epoch == entry.epoch) return;
      // Placed here again at a new epoch: it starts at that epoch once this actor is gone.
      if (here != nullptr && starts_unasked(shard)) entry.start_wanted = true;
      if (setup_->homes->fenced()) {
        stop_shard_now(entry);
      } else if (!entry.stopping) {
        stop_shard(entry);
      }
      return;  // released once the actor is gone
    }
    if (!entry.stopping) {
      if (starts_unasked()) entry.start_wanted = true;
      settle(shard, entry);
    }
    report_released(shard, &entry);
  }

  /// Tells the placement that the shard has no actor here while its home is not here: a shard
  /// handed off from this node may then start elsewhere.
  void report_released(shard_id shard, const shard_entry* entry) {
    if (entry != nullptr && (entry->route->shard || entry->stopping)) return;
    if (!std::holds_alternative<placed_here>(setup_->homes->home_of(shard))) {
      setup_->homes->released(shard);
    } else if (starts_unasked(shard)) {
      // Placed here since the caller looked, and the placement will not say so again.
      start_remembering(shard, entry_of(shard));
    }
  }

  /// Sends what waits for a shard with no running actor (the region's buffer first, then what
  /// senders hold in its route) where the shard lives now: to a new actor here,
  /// or to its remote home. With no home yet it keeps waiting.
  void settle(shard_id shard, shard_entry& entry) {
    if (drop_waiting_if_fenced(shard, entry)) return;
    if (entry.stopping || entry.route->shard || entry.flushing != 0) return;
    const shard_home home = home_of(shard, entry);
    if (flush_if_moved(shard, entry, home)) return;
    if (std::holds_alternative<placed_here>(home)) {
      if (waiting(entry) || entry.start_wanted) ensure_shard(shard, entry);
      return;
    }
    const auto* remote = std::get_if<placed_remote>(&home);
    if (remote != nullptr) entry.start_wanted = false;  // its owner starts it
    if (remote != nullptr && setup_->homes->routes_remote()) send_waiting(shard, entry, *remote);
  }

  [[nodiscard]] bool waiting(shard_entry& entry) {
    if (!entry.buffer.empty()) return true;
    std::lock_guard lock(entry.route->lock);
    return entry.route->held > 0;
  }

  /// Sends what the region buffered for the shard and then what the route holds to its remote
  /// home, in order. The route goes back to idle, so the next sender asks the region again.
  /// Messages another node sent here stay (all of them, keeping their order, and what follows
  /// them) unless `home` is newer than every epoch they were sent at.
  void send_waiting(shard_id shard, shard_entry& entry, const placed_remote& home) {
    buffer_held(entry, true);
    for (const auto& p : entry.buffer) {
      if (p.sent_at_epoch >= home.epoch) return;  // they wait for a newer home
    }
    send_buffer(shard, entry, home);
    open_remote(shard, entry, home);
  }

  /// Sends everything the region buffered for the shard to `home`, in order: messages, and
  /// other nodes' flush markers behind them.
  void send_buffer(shard_id shard, shard_entry& entry, const placed_remote& home) {
    std::deque<pending> buffer = std::move(entry.buffer);
    entry.buffer.clear();
    buffered_ -= buffer.size();
    for (auto& p : buffer) {
      if (p.message == nullptr) {
        pass_flush(home, shard, p.flush_token, p.reply_to, p.origin);
        continue;
      }
      auto failure = p.entity_id.empty()
                         ? send_failure{make_error_code(errc::invalid_entity_id), "empty entity id"}
                         : send_remote(home, shard, entry, p.entity_id, *p.message,
                                       untyped_ref(p.envelope->sender), p.stamp);
      if (!failure) continue;
      dead_letter_in_place(this->context().system().dead_letters(), std::move(p.envelope),
                           *p.message, this->context().path(), failure->code,
                           "region " + setup_->settings.type_name + ": " + failure->why);
    }
  }

  /// What a yielding region hands its flush's old home: what came here at an older epoch than
  /// the old home's, and what came from a node whose own marker waits behind it here (that node
  /// flushes, so it holds its newer messages; its marker goes back behind them, so its flush ends
  /// only once they are delivered). The rest stays, in order: its senders may still send here,
  /// and sent back it would take another path than their next messages (whole-node seed 1663: a
  /// note handed back to its sender, the old home, while its next two were on their way here).
  /// A marker stays while a message before it stays that may be its node's.
  void hand_back(shard_id shard, shard_entry& entry, const placed_remote& old_home) {
    auto& buffer = entry.buffer;
    std::vector<std::string> node(buffer.size());  // each item's node; empty: not known
    for (std::size_t i = 0; i < buffer.size(); ++i) {
      const pending& p = buffer[i];
      node[i] = p.message == nullptr ? p.origin : setup_->homes->node_of_run(p.stamp.run);
    }
    std::vector<bool> goes(buffer.size());
    std::set<std::string> marker_behind;
    for (std::size_t i = buffer.size(); i-- > 0;) {
      if (buffer[i].message == nullptr) marker_behind.insert(node[i]);
      goes[i] =
          buffer[i].message != nullptr && (buffer[i].sent_at_epoch < old_home.epoch ||
                                           (!node[i].empty() && marker_behind.contains(node[i])));
    }
    std::set<std::string> stayed;  // nodes of messages that stay, so far
    bool unknown_stayed = false;
    for (std::size_t i = 0; i < buffer.size(); ++i) {
      if (buffer[i].message != nullptr) {
        if (!goes[i]) {
          if (node[i].empty()) unknown_stayed = true;
          stayed.insert(node[i]);
        }
        continue;
      }
      goes[i] = buffer[i].sent_at_epoch < old_home.epoch ||
                (!unknown_stayed && !stayed.contains(node[i]));
    }
    std::deque<pending> back;
    std::deque<pending> stays;
    for (std::size_t i = 0; i < buffer.size(); ++i) {
      (goes[i] ? back : stays).push_back(std::move(buffer[i]));
    }
    buffer = std::move(back);
    send_buffer(shard, entry, old_home);
    entry.buffer = std::move(stays);  // still counted in buffered_
  }

  /// Two regions whose flushes of a shard wait for each other: each sent the other messages for
  /// it, and each holds the other's marker behind what it holds for the shard while its own
  /// flush runs. Neither would end but by its timeout, after which a sender's order is lost.
  /// The region whose flush has the lower token yields: it hands what it holds for the shard
  /// (what may go back, hand_back) to its flush's old home, on the path of what it sent there
  /// before (which goes first anyway), the other's marker among it, and flushes again behind it.
  /// The other region gets its marker back behind what it sent here, so its flush ends; this one's
  /// ends when the new marker is answered, after what it handed over (docs/cluster.md, "Two flushes
  /// that wait for each other"). Only the lower token yields, so the two never hand their buffers
  /// to each other. The other region may also be the shard's home in this region's view: the old
  /// home passes this region's marker on to it, where it waits the same way (a ring of three).
  void yield_if_flushes_wait_for_each_other(shard_id shard, shard_entry& entry) {
    if (entry.flushing == 0 || entry.yielded || !entry.sent_to) return;
    const placed_remote old_home = *entry.sent_to;
    const shard_home now = setup_->homes->peek_home(shard);
    const auto* home = std::get_if<placed_remote>(&now);
    const auto waits_for_this = [&](const pending& p) {
      return p.message == nullptr && p.flush_token > entry.flushing &&
             (p.origin == old_home.node || (home != nullptr && p.origin == home->node));
    };
    if (std::none_of(entry.buffer.begin(), entry.buffer.end(), waits_for_this)) return;
    hand_back(shard, entry, old_home);
    const std::uint64_t token = send_own_marker(old_home, shard);
    if (token == 0) {  // its node is no member any more: no marker can follow what it holds
      end_flush(shard, entry);
      return;
    }
    entry.flushing = token;
    entry.yielded = true;
  }

  /// Opens the shard's route to its remote home: from now on senders send there themselves,
  /// with no turn of this region per message. What they held since send_waiting took the
  /// route's messages goes first, in order, under the lock that opens it. Only routes senders
  /// share (direct mode, a shard id in the table); if the placement cannot make a link, the
  /// messages keep coming through the region.
  void open_remote(shard_id shard, shard_entry& entry, const placed_remote& home) {
    if (!setup_->routes->direct() || entry.own_route) return;
    shard_route<M>& route = *entry.route;
    {
      std::lock_guard lock(route.lock);
      if (route.state == route_state::remote && route.remote_home == home) return;
    }
    std::shared_ptr<placement::remote_link> link;
    try {
      link = setup_->homes->link_to(home, shard);
    } catch (...) {
      return;
    }
    struct unsent {
      std::unique_ptr<troupe::detail::envelope_base> envelope;
      M* message;
      std::error_code code;
      std::string why;
    };
    std::vector<unsent> failed;
    {
      std::lock_guard lock(route.lock);
      if (route.state == route_state::closed) return;
      shard_route<M>::for_each(route.take_held_locked(), [&](troupe::detail::envelope_base* e) {
        std::unique_ptr<troupe::detail::envelope_base> owned(e);
        std::string id;
        M* message = nullptr;
        try {
          message = message_of(*owned, id);
          if (id.empty()) {
            failed.push_back({std::move(owned), message, make_error_code(errc::invalid_entity_id),
                              "empty entity id"});
            return;
          }
          link->send(id, message, owned);
        } catch (...) {
          if (message != nullptr && owned) {
            auto failure = current_send_failure(home.node);
            failed.push_back({std::move(owned), message, failure.code, std::move(failure.why)});
          }
          // Else the extractor threw: the message goes with its envelope, unread.
        }
      });
      route.state = route_state::remote;
      route.remote = std::move(link);
      route.remote_home = home;
    }
    entry.sent_to = home;
    for (auto& f : failed) {
      dead_letter_in_place(this->context().system().dead_letters(), std::move(f.envelope),
                           *f.message, this->context().path(), f.code,
                           "region " + setup_->settings.type_name + ": " + f.why);
    }
  }

  /// Shuts the shard's route to its remote home: senders hold their messages again, the first
  /// asking this region. Under the route's lock, so nothing they send there can follow a flush
  /// marker this region sends after.
  void close_remote(shard_entry& entry) {
    std::lock_guard lock(entry.route->lock);
    if (entry.route->state != route_state::remote) return;
    entry.route->state = route_state::idle;
    entry.route->remote.reset();
  }

  /// The message a route held in `e` and its entity id: a delivery carries it, a counted
  /// envelope may, else the extractor reads it (and may throw).
  M* message_of(troupe::detail::envelope_base& e, std::string& id) {
    if (e.type() == typeid(M)) {
      M* m = static_cast<M*>(e.payload());
      if (auto* c = dynamic_cast<counted_envelope<M>*>(&e); c != nullptr && !c->entity_id.empty()) {
        id = c->entity_id;
      } else if (setup_->extract_entity_id) {
        id = setup_->extract_entity_id(*m);
      }
      return m;
    }
    auto& d = std::get<deliver<M>>(*static_cast<shard_message<M>*>(e.payload()));
    id = d.entity_id;
    return &d.message;
  }

  shard_entry& entry_of(shard_id shard) {
    auto [it, added] = shards_.try_emplace(shard);
    if (added) {
      it->second.route = setup_->routes->at(shard);
      if (it->second.route == nullptr) {
        it->second.own_route = std::make_unique<shard_route<M>>();
        it->second.route = it->second.own_route.get();
      }
    }
    return it->second;
  }

  /// Delivers `message` to entity `id` of `shard`; throws, leaving `message` where it is, when
  /// it cannot be moved.
  void send(shard_id shard, shard_entry& entry, std::string id, M& message,
            const untyped_ref& sender, time_point sent_at = {}) {
    ensure_shard(shard, entry);
    // Built in place in its envelope: id and message move once.
    auto* e = new troupe::detail::envelope<shard_message<M>>(
        std::in_place_type<deliver<M>>, std::move(id), std::move(message), sent_at);
    e->sender = sender.target_ptr();
    shard_route<M>& route = *entry.route;
    std::lock_guard lock(route.lock);
    route.deliver_locked(e);
  }

  /// Answers for a shard that has no running actor (it is empty), else asks the shard.
  void on_shard_query(shard_query& q) {
    auto it = shards_.find(q.shard);
    if (it == shards_.end() || !it->second.route->shard || it->second.stopping) {
      std::visit(
          overloaded{[this](get_entity_ids&) { this->context().reply(std::vector<std::string>{}); },
                     [this](get_shard_stats&) { this->context().reply(shard_stats{}); }},
          q.query);
      return;
    }
    const untyped_ref& sender = this->context().sender();
    std::visit([&](auto& query) { it->second.route->shard.tell(query, sender); }, q.query);
  }

  /// Stops a shard that stood empty, unless a delivery may still be on its way to it. Its route
  /// shuts first: from then on it holds messages for the next shard actor.
  void on_shard_idle(const shard_idle& idle) {
    auto it = shards_.find(idle.shard);
    if (it == shards_.end() || !it->second.route->shard || it->second.stopping) return;
    shard_route<M>& route = *it->second.route;
    {
      std::lock_guard lock(route.lock);
      if (route.setup->sent.load(std::memory_order_relaxed) != idle.delivered) return;  // mail
      route.state = route_state::stopping;  // under the same lock as the check
    }
    it->second.stopping = true;
    route.shard.tell(poison_pill{});
  }

  /// Stops a shard whatever it holds: its route shuts (from then on it holds messages for the
  /// next shard actor), and each entity stops after what its mailbox holds, then the shard.
  void stop_shard(shard_entry& entry) {
    {
      std::lock_guard lock(entry.route->lock);
      entry.route->state = route_state::stopping;
    }
    entry.stopping = true;
    entry.route->shard.tell(stop_entities{});
  }

  /// Stops a shard at once: its route shuts, and the shard and its entities stop after the
  /// message each is handling (what their mailboxes hold becomes dead letters).
  void stop_shard_now(shard_entry& entry) {
    if (entry.stopped_now) return;
    {
      std::lock_guard lock(entry.route->lock);
      entry.route->state = route_state::stopping;
    }
    entry.stopping = true;
    entry.stopped_now = true;
    this->context().stop(entry.route->shard);
  }

  // Shards are the region's children: it hears of each stop without watching.
  void on_child_terminated(const untyped_ref& who) override {
    for (auto& [shard, entry] : shards_) {
      if (entry.route->shard.target() != who.target()) continue;
      // The shard actor is gone; the region keeps owning the shard id. What arrived meanwhile
      // goes, in order, to a fresh shard actor (no coordinator round trip).
      bool held = false;
      {
        std::lock_guard lock(entry.route->lock);
        entry.route->shard = {};
        entry.route->setup = {};
        held = entry.route->held > 0;
        // Senders keep holding while the next actor starts; with nothing held they ask again.
        if (entry.route->state != route_state::closed) {
          entry.route->state = held ? route_state::starting : route_state::idle;
        }
      }
      entry.stopping = false;
      entry.stopped_now = false;
      // What waits goes where the placement says the shard lives now, and a shard that starts
      // unasked starts again if it lives here.
      if (held || !entry.buffer.empty() || entry.start_wanted) settle(shard, entry);
      report_released(shard, &entry);
      return;
    }
  }

  /// Sends what waited in the region's buffer for the shard, in order, to its running actor.
  void replay_buffer(shard_id shard, shard_entry& entry) {
    std::deque<pending> buffer = std::move(entry.buffer);
    buffered_ -= buffer.size();
    for (auto& p : buffer) {
      if (p.message == nullptr) {  // what came before it is in the shard's mailbox now
        setup_->homes->answer_flush(p.reply_to, shard, p.flush_token);
        continue;
      }
      try {
        send(shard, entry, std::move(p.entity_id), *p.message, untyped_ref(p.envelope->sender));
      } catch (...) {
        dead_letter_in_place(this->context().system().dead_letters(), std::move(p.envelope),
                             *p.message, this->context().path(), errc::message_copy_failed,
                             "region " + setup_->settings.type_name + ": " + copy_failure_reason());
      }
    }
  }

  /// Starts the shard actor if none runs and opens its route (unless the region must see every
  /// message). What waited goes into the new actor's mailbox first, in the order it came: the
  /// region's buffer, then what the route held (buffer_held); only then do senders reach the
  /// actor directly.
  void ensure_shard(shard_id shard, shard_entry& entry) {
    entry.start_wanted = false;
    if (!entry.route->shard) {
      auto setup = std::make_shared<shard_setup<M>>();
      // The allocation's epoch, at which the placement raised the shard's store fence before
      // answering placed_here; none on a single node (epoch 0: no allocation placed it).
      std::optional<std::uint64_t> fence;
      if (entry.epoch > 0) fence = static_cast<std::uint64_t>(entry.epoch);
      setup->home =
          troupe::detail::entity_home{setup_->settings.type_name, shard, setup_->gate,
                                      &append_entity_child_name,  fence, setup_->homes->standing()};
      setup->id = shard;
      setup->activations = entry.route->activations;
      setup->counts = setup_->counts;
      setup->spawn_entity = setup_->spawn_entity;
      setup->extract_entity_id = setup_->extract_entity_id;
      setup->extract_entity_message = setup_->extract_entity_message;
      setup->region = this->context().self_ref();
      setup->buffer_size = setup_->settings.buffer_size;
      setup->entity_supervision = setup_->settings.entity_supervision;
      setup->counted = setup_->credits != nullptr;
      if (keeps_order()) {  // the policy follows every start and stop
        setup->report_stopped = [](const untyped_ref& region, entity_stopped s) {
          region.tell_any(region_message<M>(std::in_place_type<entity_stopped>, std::move(s)));
        };
        setup->report_started = [](const untyped_ref& region, entity_started s) {
          region.tell_any(region_message<M>(std::in_place_type<entity_started>, std::move(s)));
        };
      }
      setup->report_idle = [](const untyped_ref& region, shard_idle i) {
        region.tell_any(region_message<M>(std::in_place_type<shard_idle>, i));
      };
      setup->passivation_idle = setup_->settings.shard_passivation_idle;
      setup->memory = setup_->memory;
      setup->budget = setup_->budget;
      setup->restart_backoff = setup_->settings.entity_restart_backoff;
      setup->epoch = entry.epoch;
      if (setup_->keep_alive) {
        setup->keep_alive = setup_->keep_alive(shard);
        setup->keep_alive_interval = setup_->keep_alive_interval;
      }
      if (!keeps_order()) setup->entity_idle = setup_->settings.passivation_idle;
      auto ref = this->context().template spawn<shard_actor<M>>(shard_child_name(shard), setup);
      {
        std::lock_guard lock(entry.route->lock);
        entry.route->shard = std::move(ref);
        entry.route->setup = std::move(setup);
      }
      replay_buffer(shard, entry);
      std::lock_guard lock(entry.route->lock);
      if (setup_->routes->direct() && entry.route->state != route_state::closed) {
        entry.route->release_held_locked();
        entry.route->state = route_state::open;
      }
    }
  }

  void passivate(const entity_key& key, passivation_cause cause) {
    auto it = shards_.find(key.shard);
    if (it == shards_.end() || !it->second.route->shard || it->second.stopping) {
      // No shard actor runs, so neither does the entity: forget it. A message waiting for the
      // shard starts it again, and the shard reports that start.
      policy_.entity_stopped(key);
      return;
    }
    it->second.route->shard.tell(passivate_entity{key.id, cause});
  }

  void on_tick() {
    for (auto& victim : policy_.interval_passed(this->context().clock().now())) {
      passivate(victim, passivation_cause::idle);
    }
  }

  [[nodiscard]] region_state state() {
    region_state out;
    out.type_name = setup_->settings.type_name;
    out.num_shards = setup_->settings.num_shards;
    for (const auto& [id, entry] : shards_) {
      shard_info info;
      info.id = id;
      info.resident = static_cast<bool>(entry.route->shard) && !entry.stopping;
      info.stopping = static_cast<bool>(entry.route->shard) && entry.stopping;
      // Not home_of(): that answer would swallow news of the shard the region waits for.
      describe_home(info, setup_->homes->peek_home(id));
      {
        std::lock_guard lock(entry.route->lock);
        info.messages_processed = entry.route->messages;
        info.activations = entry.route->activations->load(std::memory_order_relaxed);
        out.buffered += entry.route->held;
      }
      out.shards.push_back(info);
    }
    out.buffered += buffered_;
    out.passivations = setup_->counts->read_passivations();
    out.buffer_overflows = setup_->counts->buffer_overflows.load(std::memory_order_relaxed);
    if (setup_->credits) {
      setup_->credits->for_each([&out](const shard_credit& c) {
        out.outstanding += c.outstanding();
        out.outstanding_peak = std::max(out.outstanding_peak, c.peak());
      });
    }
    return out;
  }

  /// Where the placement says the shard lives (introspection).
  void describe_home(shard_info& info, const shard_home& home) const {
    if (const auto* here = std::get_if<placed_here>(&home)) {
      info.local = true;
      info.owner = setup_->homes->self_node();
      info.epoch = here->epoch;
    } else if (const auto* remote = std::get_if<placed_remote>(&home)) {
      info.local = false;
      info.owner = remote->node;
      info.epoch = remote->epoch;
    } else {
      info.local = false;
    }
  }

  /// Publishes `message`, which lives in the envelope being handled, as a dead letter (without
  /// moving it: its move may be what failed).
  void reject(M& message, std::string reason, errc code = errc::invalid_entity_id) {
    reject(message, std::move(reason), make_error_code(code));
  }
  void reject(M& message, std::string reason, std::error_code code) {
    auto* e = this->context().cell().release_current();
    if (e == nullptr) return;  // not in a handler: cannot happen
    dead_letter_in_place(this->context().system().dead_letters(),
                         std::unique_ptr<troupe::detail::envelope_base>(e), message,
                         this->context().path(), code,
                         "region " + setup_->settings.type_name + ": " + std::move(reason));
  }

  std::shared_ptr<const region_setup<M>> setup_;
  idle_and_lru_policy policy_;
  std::map<shard_id, shard_entry> shards_;  // ordered: introspection lists shards by id
  std::size_t buffered_ = 0;
  // The last flush token this region used; its placement picks the first (a region knows its
  // own marker when it comes back by its token).
  std::uint64_t flush_tokens_ = setup_->homes->first_flush_token();
  std::uint32_t sampled_ = 0;
};

}  // namespace troupe::sharding::detail
