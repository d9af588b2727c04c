#include <troupe/cluster/cluster_node.hpp>
#include <troupe/core/boottime_clock.hpp>
#include <troupe/core/errc.hpp>
#include <troupe/persistence/persistence_extension.hpp>
#include <troupe/persistence/remembered_in_store.hpp>
#include <troupe/sharding/coordination/strategy_config.hpp>

#include "cluster/cluster_recorder.hpp"
#include "cluster/cluster_state_reader.hpp"
#include "cluster/coordination/coordination_keys.hpp"
#include "cluster/coordination/coordinator_endpoint.hpp"
#include "cluster/membership/lease_keeper.hpp"
#include "cluster/membership/members.hpp"
#include "cluster/placement/cluster_placement.hpp"
#include "cluster/placement/delivery_endpoint.hpp"

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

namespace troupe::cluster {

namespace coord = sharding::coordination;

struct cluster_node::state : std::enable_shared_from_this<state> {
  actor_system* system = nullptr;
  std::uint64_t signal_step = 0;  // leaves the cluster on run_until_signal's signal
  sharding::cluster_sharding* sharding = nullptr;
  remote_node* remote = nullptr;
  std::shared_ptr<consensus_store> store;
  std::shared_ptr<troupe::clock> clock;
  cluster_node_options options;
  std::string address;
  std::shared_ptr<coordinator_directory> runners = std::make_shared<coordinator_directory>();
  untyped_ref endpoint;
  untyped_ref rebalancer;
  std::shared_ptr<cluster_recorder> metrics;  // null without options.metrics
  std::shared_ptr<placement_directory> placed_types = std::make_shared<placement_directory>();
  untyped_ref deliveries;
  std::shared_ptr<lease_keeper> keeper;
  /// The keeper's deadline, as the entities here check it before each message.
  std::shared_ptr<troupe::detail::node_standing> standing;
  /// Tells the remoting when a member is gone: the end of its watches and asks.
  std::shared_ptr<members_view> members;
  std::promise<void> joined_promise;
  std::shared_future<void> joined = joined_promise.get_future().share();

  /// Held while on_fenced (and the remoting's left_cluster) runs; `destroyed` set under it: no
  /// call after ~cluster_node, after which the remote node may be gone too.
  std::mutex fenced_callback_mutex;
  bool destroyed = false;

  mutable std::mutex mutex;
  lease_id lease = 0;
  revision joined_at = 0;  // the member key's revision
  bool fenced = false;
  std::map<std::string, std::shared_ptr<cluster_placement>, std::less<>> placements;
  /// leave() saw every shard of this node handed off before it revoked the lease: the revoke
  /// then stops nothing at once, and the regions go on passing on what arrives.
  std::atomic<bool> left_cleanly{false};

  /// How long leave() waits for the hand-offs before it revokes the lease anyway.
  duration leave_timeout() const {
    if (options.leave_timeout) return *options.leave_timeout;
    if (auto d = system->config().get_duration("troupe.sharding.leave-timeout")) return *d;
    return configured(options.handoff_timeout, "hand-off-timeout") + options.lease_ttl;
  }

  /// A coordinator's duration: the option when set, else the config's
  /// `troupe.sharding.<key>`, else 10 s.
  duration configured(const std::optional<duration>& option, const char* key) const {
    if (option) return *option;
    if (auto d = system->config().get_duration(std::string("troupe.sharding.") + key)) return *d;
    return std::chrono::seconds(10);
  }

  bool has_role(const std::string& role) const {
    return role.empty() ||
           std::find(options.roles.begin(), options.roles.end(), role) != options.roles.end();
  }

  /// The node's lease is gone or in doubt (`fenced_itself`), or it leaves: nothing here hosts
  /// or decides any more. The placements go on reading, so the regions route to the nodes that
  /// host now. Fenced, the running shards stop at once rather than drain.
  void stop_hosting(bool fenced_itself) {
    std::map<std::string, std::shared_ptr<cluster_placement>, std::less<>> placed;
    {
      std::lock_guard lock(mutex);
      fenced = true;
      placed = placements;
    }
    for (auto& [type, p] : placed) {
      p->stop_hosting(fenced_itself);
      if (auto r = runners->find(type)) r->stop();
      runners->set(type, nullptr);
    }
  }

  /// `ended_run`: the node fenced itself (not after a clean leave), and the other nodes refuse
  /// what is bound to its run once its key goes: the answers to its asks will not come.
  void tell_fenced(const std::string& reason, bool ended_run) {
    std::lock_guard lock(fenced_callback_mutex);
    if (destroyed) return;
    if (ended_run) {
      remote->left_cluster("node " + options.node + " fenced itself (" + reason +
                           "): no other node answers its ended run");
    }
    if (options.on_fenced) options.on_fenced(reason);
  }

  /// A member's key is gone (its lease ran out, it left or was evicted): unless another
  /// incarnation listens at its address, the remoting ends what depends on it.
  void on_member_change(const member_change& change) {
    if (change.member.address == address) return;
    if (change.type == member_change::kind::joined) {
      // A new run of a node that left: what the remoting refused for the old one goes through.
      if (const auto at = parse_node_address(change.member.address)) remote->node_joined(*at);
      return;
    }
    if (change.type != member_change::kind::left) return;
    std::shared_ptr<members_view> view;
    {
      std::lock_guard lock(mutex);  // set by join() after the view may have started reporting
      view = members;
    }
    if (!view) return;
    for (const auto& m : view->members()) {
      if (m.address == change.member.address && m.info.id != change.member.info.id) return;
    }
    const auto at = parse_node_address(change.member.address);
    if (!at) return;
    remote->node_left(*at,
                      "node " + change.member.info.id.node + " (" + change.member.address +
                          ") left the cluster: its member key is gone",
                      change.member.info.leaving);
  }

  /// The node goes away: nothing is hosted, decided or read any more.
  void stop_everything() {
    stop_hosting(false);
    std::map<std::string, std::shared_ptr<cluster_placement>, std::less<>> placed;
    {
      std::lock_guard lock(mutex);
      placed.swap(placements);
    }
    for (auto& [type, p] : placed) {
      p->stop();
      placed_types->set(type, nullptr);
    }
  }

  void on_granted(std::error_code ec, lease_id granted) {
    if (ec) {
      joined_promise.set_exception(
          std::make_exception_ptr(troupe::error(ec, "cluster: granting the node's lease")));
      return;
    }
    member_record m;
    m.info.id = {options.node, granted};
    m.info.roles = options.roles;
    m.info.app_version = options.app_version;
    m.address = address;
    register_member(*store, options.cluster_name, m,
                    [self = shared_from_this(), granted](std::error_code e, revision at) {
                      if (e) {
                        self->joined_promise.set_exception(std::make_exception_ptr(
                            troupe::error(e, "cluster: writing the member key")));
                        return;
                      }
                      {
                        std::lock_guard lock(self->mutex);
                        self->lease = granted;
                        self->joined_at = at;
                      }
                      troupe::logger()->info("cluster {}: {} joined at {} (lease {:x})",
                                             self->options.cluster_name, self->options.node,
                                             self->address, granted);
                      self->joined_promise.set_value();
                    });
  }

  std::shared_ptr<sharding::placement> place(const sharding::region_settings& s,
                                             const std::type_info& message_type) {
    coord::member_id self;
    revision self_joined_at = 0;
    {
      std::lock_guard lock(mutex);
      if (lease == 0 || fenced) {
        throw troupe::error(troupe::errc::invalid_config,
                            "cluster: start sharded type '" + s.type_name +
                                "' after cluster_node::joined() and before the node is fenced");
      }
      self = {options.node, lease};
      self_joined_at = joined_at;
    }
    check_type_name(s.type_name);
    // The type's messages cross nodes: a type that cannot fails here, not at its first send.
    auto registry = remote->registry();
    const message_registry::entry* entry = registry->find(message_type);
    if (entry == nullptr) {
      throw troupe::error(troupe::errc::invalid_config,
                          "cluster: sharded type '" + s.type_name +
                              "': its message type is not in the remote node's message registry "
                              "(message_registry::add)");
    }
    const bool hosts = !s.proxy && has_role(s.role);
    std::shared_ptr<coordinator_runner> runner;
    if (hosts) {
      coordinator_runner_options ro;
      ro.cluster = options.cluster_name;
      ro.type = s.type_name;
      ro.self = self;
      ro.settings.role = s.role;
      ro.settings.rebalance_interval = configured(options.rebalance_interval, "rebalance-interval");
      ro.settings.handoff_timeout = configured(options.handoff_timeout, "hand-off-timeout");
      ro.retry = options.retry;
      ro.metrics = metrics;
      auto strategy =
          options.strategy ? options.strategy(s) : coord::strategy_from_config(system->config());
      // Answers travel as the allocations every region watches.
      runner = coordinator_runner::start(store, clock, std::move(ro), std::move(strategy),
                                         [](const coord::answer_home&) {});
      runners->set(s.type_name, runner);
    }
    fence_raiser fences;
    if (hosts) {
      fences = raise_fences_in(
          persistence::persistence_extension::get(*system).plugin_for(s.type_name), s.type_name);
    }
    cluster_placement_options po;
    po.cluster = options.cluster_name;
    po.type = s.type_name;
    po.self = self;
    po.joined_at = self_joined_at;
    po.proxy = !hosts;
    po.retry = options.retry;
    auto refs = make_endpoint_refs(*remote);
    po.link = link_over(refs, registry, *entry, s.type_name);
    po.send = deliver_over(refs, std::move(registry), *entry, s.type_name);
    po.send_flush = flush_over(refs, s.type_name, deliveries);
    po.answer_flush = answer_flush_of(s.type_name);
    // A leaving owner answers once its shards have drained and moved (within about a lease).
    po.flush_timeout = std::max<duration>(std::chrono::seconds(5), 2 * options.lease_ttl);
    po.standing = standing;
    if (hosts) {
      // Twice per rebalance round, so a round plans on rates at most half a round old.
      po.load_interval =
          std::max<duration>(std::chrono::milliseconds(100),
                             configured(options.rebalance_interval, "rebalance-interval") / 2);
    }
    auto cell = std::make_shared<std::weak_ptr<cluster_placement>>();
    auto placement =
        cluster_placement::start(store, clock, std::move(po), std::move(fences),
                                 ask_every_coordinator(runners, *remote, s.type_name, self, cell));
    *cell = placement;
    placed_types->set(s.type_name, placement);
    std::lock_guard lock(mutex);
    placements[s.type_name] = placement;
    return placement;
  }
};

namespace {

void check_node_text(const std::string& what, const std::string& text) {
  if (text.empty() || text.find_first_of("/#\n") != std::string::npos) {
    throw std::invalid_argument("cluster_node: the " + what + " '" + text +
                                "' must be non-empty without '/', '#' or a newline");
  }
}

}  // namespace

std::shared_ptr<cluster_node> cluster_node::join(actor_system& system,
                                                 sharding::cluster_sharding& sharding,
                                                 remote_node& remote,
                                                 std::shared_ptr<consensus_store> store,
                                                 cluster_node_options options,
                                                 std::shared_ptr<troupe::clock> clock) {
  if (!store) throw std::invalid_argument("cluster_node: a consensus store is required");
  auto s = std::make_shared<state>();
  s->system = &system;
  s->sharding = &sharding;
  s->remote = &remote;
  s->store = std::move(store);
  s->clock = clock ? std::move(clock) : make_boottime_clock();
  s->standing = std::make_shared<troupe::detail::node_standing>(s->clock);
  s->address = to_string(remote.self().address);
  if (options.node.empty()) options.node = s->address;
  check_node_text("node id", options.node);
  check_node_text("cluster name", options.cluster_name);
  for (const auto& role : options.roles) check_node_text("role", role);
  s->options = std::move(options);

  s->endpoint = system.spawn_system_actor<coordinator_endpoint>(
      spawn_options{"cluster-coordinators"},
      std::shared_ptr<const coordinator_directory>(s->runners));
  remote.expose(s->endpoint);
  s->rebalancer = system.spawn_system_actor<rebalance_endpoint>(
      spawn_options{"cluster-rebalance"}, std::shared_ptr<const coordinator_directory>(s->runners));
  remote.expose(s->rebalancer);
  s->deliveries =
      delivery_endpoint::start(system, std::shared_ptr<const placement_directory>(s->placed_types));
  remote.expose(s->deliveries);

  // Membership, not heartbeats, decides when a node is gone.
  remote.follow_membership();
  auto view = members_view::start(
      s->store, s->clock, s->options.cluster_name,
      [weak = std::weak_ptr<state>(s)](const member_change& change) {
        if (auto self = weak.lock()) self->on_member_change(change);
      },
      s->options.retry);
  {
    std::lock_guard lock(s->mutex);
    s->members = std::move(view);
  }

  sharding.set_placement_factory(
      [weak = std::weak_ptr<state>(s)](
          const sharding::region_settings& settings,
          const std::type_info& message_type) -> std::shared_ptr<sharding::placement> {
        auto self = weak.lock();
        if (!self)
          throw troupe::error(troupe::errc::invalid_config, "cluster: the cluster node is gone");
        return self->place(settings, message_type);
      });

  // Remembered entities live in each type's plugin, fenced per shard like its journals.
  persistence::remember_entities_in_plugins(system);

  lease_keeper_options lo;
  lo.ttl = s->options.lease_ttl;
  lo.margin = s->options.lease_margin;
  lo.standing = s->standing;
  if (s->options.metrics) {
    s->metrics = std::make_shared<cluster_recorder>(*s->options.metrics);
    s->metrics->identify(s->options.cluster_name, s->options.node, s->address,
                         s->options.app_version);
    lo.on_renewed = [m = s->metrics](duration took) { m->lease_renewed(took); };
  }
  std::weak_ptr<state> weak = s;
  s->keeper = lease_keeper::start(
      s->store, s->clock, lo,
      [weak](std::error_code ec, lease_id lease) {
        if (auto self = weak.lock()) self->on_granted(ec, lease);
      },
      [weak](fence_reason why) {
        auto self = weak.lock();
        if (!self) return;
        troupe::logger()->warn("cluster {}: {} fenced itself ({}): it hosts no shard any more",
                               self->options.cluster_name, self->options.node, to_string(why));
        if (self->metrics) self->metrics->fenced(why);
        // After a complete hand-off this node's view holds every commit of its shards, so its
        // regions may go on passing on late arrivals to the new owners (docs/cluster.md,
        // "Leaving"); any other fence stops everything at once.
        const bool left_cleanly = why == fence_reason::revoked && self->left_cleanly;
        self->stop_hosting(!left_cleanly);
        self->tell_fenced(std::string(to_string(why)), !left_cleanly);
      });
  auto node = std::shared_ptr<cluster_node>(new cluster_node(s));
  // SIGTERM or SIGINT through run_until_signal: leave gracefully (the shards are handed off)
  // before the system stops, within about a lease.
  s->signal_step = system.add_signal_step([weak = std::weak_ptr<cluster_node>(node)] {
    auto self = weak.lock();
    if (!self) return;
    troupe::logger()->info("cluster {}: {} leaves on a signal", self->state_->options.cluster_name,
                           self->state_->options.node);
    auto left = std::make_shared<std::promise<void>>();
    self->leave([left](std::error_code) { left->set_value(); });
    left->get_future().wait_for(self->state_->leave_timeout() + self->state_->options.lease_ttl +
                                std::chrono::seconds(1));
  });
  return node;
}

std::shared_future<void> cluster_node::joined() const { return state_->joined; }

bool cluster_node::ready(const std::string& type_name) const {
  std::lock_guard lock(state_->mutex);
  auto it = state_->placements.find(type_name);
  return it != state_->placements.end() && it->second->ready();
}

coord::member_id cluster_node::self() const {
  std::lock_guard lock(state_->mutex);
  return {state_->options.node, state_->lease};
}

bool cluster_node::fenced() const {
  std::lock_guard lock(state_->mutex);
  return state_->fenced || state_->keeper->fenced();
}

bool cluster_node::leads(const std::string& type_name) const {
  auto runner = state_->runners->find(type_name);
  return runner && runner->leading();
}

std::size_t cluster_node::hosting_regions(const std::string& type_name) const {
  auto runner = state_->runners->find(type_name);
  return runner ? runner->hosting_regions() : 0;
}

bool cluster_node::rebalance(const std::string& type_name) {
  std::shared_ptr<members_view> view;
  {
    std::lock_guard lock(state_->mutex);
    view = state_->members;
  }
  std::vector<std::string> addresses;
  if (view) {
    for (const auto& m : view->members()) addresses.push_back(m.address);
  }
  return ask_every_coordinator_to_rebalance(*state_->runners, *state_->remote, type_name, addresses,
                                            state_->address);
}

std::future<cluster_state> cluster_node::read_state() const {
  auto promise = std::make_shared<std::promise<cluster_state>>();
  auto result = promise->get_future();
  read_cluster_state(*state_->store, state_->options.cluster_name,
                     [s = state_, promise](std::error_code ec, cluster_state read) {
                       if (ec) {
                         promise->set_exception(std::make_exception_ptr(
                             troupe::error(ec, "cluster: reading the cluster state")));
                         return;
                       }
                       std::map<std::string, peer_status> peers;
                       for (auto& p : s->remote->peers())
                         peers.emplace(to_string(p.address), std::move(p));
                       const auto self = [&] {
                         std::lock_guard lock(s->mutex);
                         return coord::member_id{s->options.node, s->lease};
                       }();
                       for (auto& m : read.members) {
                         if (m.info.id == self) {
                           m.reach = reachability::self;
                         } else if (auto it = peers.find(m.address); it != peers.end()) {
                           m.reach = it->second.connected     ? reachability::connected
                                     : it->second.unreachable ? reachability::unreachable
                                                              : reachability::not_connected;
                         }
                       }
                       promise->set_value(std::move(read));
                     });
  return result;
}

namespace {

/// Messages this node's remoting holds for other nodes and has not written yet.
std::size_t queued_for_peers(const remote_node& remote) {
  std::size_t n = 0;
  for (const auto& p : remote.peers()) n += p.queued_messages;
  return n;
}

}  // namespace

/// A graceful leave's waiting, in steps on the node's clock (no thread of its own, so a
/// simulation runs it like the rest of the node). Every 10 ms it asks each type's region, without
/// blocking, whether shards still run or messages for moved shards still wait here, and the
/// type's placement whether it still owns shards. Once none does, it keeps the lease until other
/// nodes' regions have sent nothing for a moment (one whose view lags may still send here what
/// it thinks this node hosts, and its regions pass that on to the new owners), looks once more, and
/// revokes the lease (at the leave timeout at once). After a complete hand-off it then lingers
/// until what was passed on has been written (the remoting drops what it still holds when it
/// shuts down), at most one lease TTL. Then `done`. Each step starts the next, so one runs at a
/// time; cancel() ends it between two.
class cluster_node::leave_run : public std::enable_shared_from_this<leave_run> {
 public:
  leave_run(std::shared_ptr<state> s, std::vector<std::string> types,
            std::function<void(std::error_code)> done)
      : s_(std::move(s)),
        types_(std::move(types)),
        done_(std::move(done)),
        deadline_(s_->clock->now() + s_->leave_timeout()),
        next_report_(s_->clock->now() + std::chrono::seconds(2)) {}

  void start() { check_type(); }

  /// The node is destroyed: no further step; `done` gets operation_canceled unless it had its
  /// answer (the lease then runs out on its own).
  void cancel() { finish(std::make_error_code(std::errc::operation_canceled), true); }

 private:
  static constexpr auto poll_every = std::chrono::milliseconds(10);
  static constexpr auto quiet = std::chrono::milliseconds(250);

  /// Runs `step` after `d` on the node's clock, unless the leave ended meanwhile.
  void after(duration d, void (leave_run::*step)()) {
    std::lock_guard lock(mutex_);
    if (finished_) return;
    timer_ = s_->clock->schedule_after(d, [self = shared_from_this(), step] {
      {
        std::lock_guard held(self->mutex_);
        if (self->finished_) return;
        self->timer_ = 0;
      }
      ((*self).*step)();
    });
  }

  /// Asks the current type's region what still runs or waits here.
  void check_type() {
    if (index_ == types_.size()) {
      if (held_quiet_) {
        revoke();
        return;
      }
      arrived_ = arrivals();
      last_arrival_ = s_->clock->now();
      hold_until_quiet();
      return;
    }
    try {
      s_->sharding->region_state_async(
          types_[index_], std::chrono::seconds(1),
          [self = shared_from_this()](std::exception_ptr failed, sharding::region_state region) {
            self->on_region(failed, region);
          });
    } catch (const std::exception&) {
      on_region(std::current_exception(), {});
    }
  }

  void on_region(const std::exception_ptr& failed, const sharding::region_state& region) {
    const auto& type = types_[index_];
    std::size_t resident = 0;
    bool running = true;  // a busy region answers late: ask again; what the placement owns
                          // decides (below), or the leave timeout
    if (!failed) {
      for (const auto& shard : region.shards) resident += shard.resident || shard.stopping ? 1 : 0;
      // And until what the region holds for shards that moved has gone on to their new owners:
      // it would be lost with this node.
      running = resident != 0 || region.buffered != 0;
    }
    // And until its shards were handed off: what waits for them here goes on to their new
    // owners, not lost with this node.
    const auto placed = s_->placed_types->find(type);
    if (placed && placed->owns_shards()) running = true;
    if (!running) {
      ++index_;
      next_report_ = s_->clock->now() + std::chrono::seconds(2);
      check_type();
      return;
    }
    const auto now = s_->clock->now();
    if (now >= next_report_) {  // a slow leave says why
      next_report_ += std::chrono::seconds(2);
      troupe::logger()->info(
          "cluster {}: {} leaving, {}: {} shard(s) still running, {} message(s) held; {}",
          s_->options.cluster_name, s_->options.node, type, resident, region.buffered,
          placed ? placed->owned_shards_progress() : std::string());
    }
    if (now >= deadline_) {
      handed_off_ = false;
      troupe::logger()->warn(
          "cluster {}: {} leaves with shards of {} not handed off after the leave timeout: they "
          "fail over",
          s_->options.cluster_name, s_->options.node, type);
      revoke();
      return;
    }
    after(poll_every, &leave_run::check_type);
  }

  /// Nothing runs or waits here any more; the lease stays until other nodes' regions have sent
  /// nothing for a moment. While the member key stands, regions whose view lags still reach this
  /// node, which passes on what they send; once it is gone, their remoting fails what it holds for
  /// this node
  /// ("node left"), so what sat in their queues or followed their stale routes would be lost.
  void hold_until_quiet() {
    const auto now = s_->clock->now();
    if (const auto arrived = arrivals(); arrived != arrived_) {
      arrived_ = arrived;
      last_arrival_ = now;
    }
    if (now - last_arrival_ >= quiet || now >= deadline_) {
      held_quiet_ = true;  // once more through the types: what came meanwhile went on
      index_ = 0;
      check_type();
      return;
    }
    after(poll_every, &leave_run::hold_until_quiet);
  }

  /// What other nodes' regions have sent this node's regions so far (not the replies to its own
  /// senders, which go on while it leaves).
  std::uint64_t arrivals() const {
    std::uint64_t n = 0;
    for (const auto& type : types_) {
      if (const auto placed = s_->placed_types->find(type)) n += placed->arrivals();
    }
    return n;
  }

  /// Gives the lease back; an answer that does not come within a lease TTL counts as timed out.
  void revoke() {
    s_->left_cleanly = handed_off_;
    after(s_->options.lease_ttl, &leave_run::revoke_timed_out);
    s_->keeper->revoke([self = shared_from_this()](std::error_code ec) { self->revoked(ec); });
  }
  void revoke_timed_out() { finish(std::make_error_code(std::errc::timed_out), false); }

  void revoked(std::error_code ec) {
    timer_id timer = 0;
    {
      std::lock_guard lock(mutex_);
      if (finished_ || revoke_answered_) return;
      revoke_answered_ = true;
      std::swap(timer, timer_);
    }
    if (timer != 0) s_->clock->cancel(timer);
    if (ec || !handed_off_) {
      finish(ec, false);
      return;
    }
    linger_until_ = s_->clock->now() + s_->options.lease_ttl;
    received_ = s_->remote->stats().messages_received;
    last_arrival_ = s_->clock->now();
    linger();
  }

  void linger() {
    const auto now = s_->clock->now();
    if (const auto received = s_->remote->stats().messages_received; received != received_) {
      received_ = received;
      last_arrival_ = now;
    }
    const bool lingering = now - last_arrival_ < quiet || queued_for_peers(*s_->remote) > 0;
    if (now >= linger_until_ || !lingering) {
      finish({}, false);
      return;
    }
    after(poll_every, &leave_run::linger);
  }

  /// Ends the leave once: `done` gets `ec` (outside the lock, on this step's thread).
  void finish(std::error_code ec, bool cancelled) {
    std::function<void(std::error_code)> done;
    timer_id timer = 0;
    {
      std::lock_guard lock(mutex_);
      if (finished_) return;
      finished_ = true;
      if (cancelled) std::swap(timer, timer_);
      done = std::move(done_);
    }
    if (timer != 0) s_->clock->cancel(timer);
    if (done) done(ec);
  }

  const std::shared_ptr<state> s_;
  const std::vector<std::string> types_;
  std::function<void(std::error_code)> done_;
  const time_point deadline_;
  time_point next_report_;
  std::size_t index_ = 0;  // the type being waited for
  bool handed_off_ = true;
  bool held_quiet_ = false;  // nothing arrived for `quiet` after the shards were handed off
  time_point linger_until_{};
  time_point last_arrival_{};
  std::uint64_t received_ = 0;
  std::uint64_t arrived_ = 0;  // arrivals() when last looked at, before the revoke
  std::mutex mutex_;  // finished_, revoke_answered_ and timer_: steps and cancel() may meet
  bool finished_ = false;
  bool revoke_answered_ = false;
  timer_id timer_ = 0;
};

cluster_node::~cluster_node() {
  {
    std::lock_guard lock(state_->fenced_callback_mutex);
    state_->destroyed = true;
  }
  std::shared_ptr<leave_run> leaving;
  {
    std::lock_guard lock(state_->mutex);
    leaving = leaving_;
  }
  if (leaving) leaving->cancel();
  state_->system->remove_signal_step(state_->signal_step);
  state_->stop_everything();
  state_->members->stop();  // set by join(), on this thread's side of it
  state_->keeper->stop();
  state_->system->stop(state_->endpoint);
  state_->system->stop(state_->rebalancer);
  delivery_endpoint::close(state_->deliveries);
}

void cluster_node::leave(std::function<void(std::error_code)> done) {
  std::vector<std::string> types;
  {
    std::lock_guard lock(state_->mutex);
    for (const auto& [type, p] : state_->placements) types.push_back(type);
  }
  // Marked leaving: the other regions stop sending to its shards (what they send waits for the
  // next owner) and flush what they sent here while it is still a member.
  {
    member_record m;
    {
      std::lock_guard lock(state_->mutex);
      m.info.id = {state_->options.node, state_->lease};
    }
    m.info.roles = state_->options.roles;
    m.info.app_version = state_->options.app_version;
    m.info.leaving = true;
    m.address = state_->address;
    if (m.info.id.incarnation != 0) {
      update_member(*state_->store, state_->options.cluster_name, m,
                    [](std::error_code, revision) {});
    }
  }
  // The placements stop first: every region hears its running shards' homes are gone and stops
  // them. The keys go only once no shard runs here, so a shard's next owner never starts
  // beside a copy still draining here.
  state_->stop_hosting(false);
  {
    std::lock_guard lock(state_->mutex);
    if (leaving_) return;  // already leaving
    leaving_ = std::make_shared<leave_run>(state_, std::move(types), std::move(done));
  }
  leaving_->start();
}

}  // namespace troupe::cluster
