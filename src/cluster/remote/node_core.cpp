#include "node_core.hpp"

#include <troupe/core/actor.hpp>
#include <troupe/core/detail/real_time_use.hpp>

#include <boost/asio/post.hpp>

#include <algorithm>
#include <future>
#include <random>

namespace troupe::cluster::detail {

namespace {

/// The system actor remote refs hang on: it keeps the runtime they report to alive.
class remote_anchor final : public troupe::actor<std::monostate> {
  void receive(std::monostate& /*unused*/) override {}
};

std::uint64_t random_incarnation() {
  std::random_device rd;
  std::uint64_t v = 0;
  while (v == 0) v = (static_cast<std::uint64_t>(rd()) << 32U) ^ rd();
  return v;
}

}  // namespace

node_core::node_core(actor_system& system, remote_options options)
    : system_(system), options_(std::move(options)) {
  auto require = [](bool ok, const char* what) {
    if (!ok)
      throw troupe::error(troupe::errc::invalid_config, std::string("remote_options: ") + what);
  };
  require(options_.registry != nullptr, "a message registry is required (with_registry)");
  require(static_cast<bool>(options_.transport), "a transport is required (with_transport)");
  require(!options_.cluster_name.empty(), "the cluster name is empty");
  require(options_.max_frame_size >= 1024, "max_frame_size must be at least 1024 bytes");
  require(options_.max_queued_unconnected > 0 && options_.max_queued_connected > 0,
          "the queue bounds must be positive");
  require(options_.max_queued_bytes >= options_.max_frame_size,
          "max_queued_bytes must be at least max_frame_size");
  require(options_.heartbeat_interval.count() > 0, "heartbeat_interval must be positive");
  require(options_.unreachable_after > options_.heartbeat_interval,
          "unreachable_after must be longer than heartbeat_interval");
  require(options_.handshake_timeout.count() > 0, "handshake_timeout must be positive");
  require(options_.reconnect_backoff_min.count() > 0 &&
              options_.reconnect_backoff_max >= options_.reconnect_backoff_min,
          "reconnect backoff needs 0 < min <= max");
  self_.incarnation = options_.incarnation != 0 ? options_.incarnation : random_incarnation();
}

void node_core::start() {
  anchor_ = system_.spawn_system_actor<remote_anchor>(spawn_options{}).target_ptr();
  if (options_.on_system_io) {
    io_ = &system_.io_context();
  } else {
    own_io_ = std::make_unique<boost::asio::io_context>(1);
    io_ = own_io_.get();
    work_.emplace(io_->get_executor());
  }
  transport_ = options_.transport(io_->get_executor());
  // Listen on the I/O thread's executor before it runs: nothing races yet.
  self_.address =
      transport_->listen(options_.bind, [self = weak_from_this()](std::shared_ptr<stream> s) {
        if (auto core = self.lock()) core->accept(std::move(s));
      });
  tick_timer_.emplace(clock(), io_->get_executor());
  schedule_tick();
  if (!own_io_) {
    troupe::logger()->info("remote: node {} listening (on the system's I/O)", to_string(self_));
    return;
  }
  troupe::detail::note_real_time_use("the remoting's I/O thread");
  thread_ = std::thread([this] {
    try {
      io_->run();
    } catch (const std::exception& ex) {
      troupe::logger()->critical("remote: I/O thread failed: {}", ex.what());
    }
  });
  troupe::logger()->info("remote: node {} listening", to_string(self_));
}

void node_core::close_on_io() {
  tick_timer_.reset();
  std::vector<std::shared_ptr<peer>> peers;
  {
    std::lock_guard lock(mutex_);
    for (auto& [a, p] : peers_) peers.push_back(p);
  }
  for (auto& p : peers) p->close();
  for (auto& in : std::vector(inbound_)) in->close();
  inbound_.clear();
  transport_->shutdown();
  exports_.clear();
  export_ids_.clear();
  work_.reset();
}

void node_core::shutdown() {
  if (closed_.exchange(true)) return;
  if (thread_.joinable()) {
    std::promise<void> done;
    boost::asio::post(*io_, [this, &done] {
      close_on_io();
      done.set_value();
    });
    done.get_future().wait();
    io_->stop();
    thread_.join();
  } else if (!own_io_ && transport_) {
    close_on_io();  // the system's driver runs the I/O: that is this thread
  }
  {
    std::lock_guard lock(mutex_);
    peers_.clear();  // peers hold the core: break the cycle
    exposed_.clear();
  }
  transport_.reset();
  {
    std::unique_lock lock(io_lifetime_);
    io_gone_ = true;
  }
  own_io_.reset();  // destroys pending handlers, which hold peers
}

std::shared_ptr<peer> node_core::peer_at(const node_address& address) {
  std::lock_guard lock(mutex_);
  auto& p = peers_[address];
  if (!p) p = std::make_shared<peer>(shared_from_this(), address);
  return p;
}

void node_core::expose(const untyped_ref& ref) {
  if (!ref) throw cluster_error(errc::invalid_address, "expose: empty ref");
  std::lock_guard lock(mutex_);
  exposed_[ref.path()] = ref.target_ptr();
}

intrusive_ptr<actor_target> node_core::exposed(const std::string& path) {
  std::lock_guard lock(mutex_);
  auto it = exposed_.find(path);
  if (it == exposed_.end()) return {};
  if (it->second->is_terminated()) {
    exposed_.erase(it);
    return {};
  }
  return it->second;
}

const node_core::exported& node_core::export_target(actor_target* t) {
  auto [it, fresh] = export_ids_.try_emplace(t);
  if (fresh) {
    // The path is built once per export, not for every message the target sends.
    it->second.id = next_export_++;
    it->second.path = t->path();
    it->second.temporary = it->second.path.starts_with("/temp/");
    exports_.emplace(it->second.id, intrusive_ptr<actor_target>(t));
  }
  return it->second;
}

intrusive_ptr<actor_target> node_core::resolve(const recipient_spec& spec) {
  if (spec.export_id != 0) {
    auto it = exports_.find(spec.export_id);
    return it == exports_.end() ? intrusive_ptr<actor_target>() : it->second;
  }
  return exposed(spec.path);
}

void node_core::sweep_exports() {
  std::vector<std::uint64_t> gone;
  for (auto& [id, target] : exports_) {
    if (target->is_terminated()) gone.push_back(id);
  }
  for (auto id : gone) {
    auto it = exports_.find(id);
    export_ids_.erase(it->second.get());
    exports_.erase(it);
  }
}

void node_core::schedule_tick() {
  tick_timer_->wait_for(options_.heartbeat_interval, [this] {
    if (closed()) return;
    const auto now = this->now();
    std::vector<std::shared_ptr<peer>> peers;
    {
      std::lock_guard lock(mutex_);
      for (auto& [a, p] : peers_) peers.push_back(p);
    }
    for (auto& p : peers) p->tick(now);
    sweep_exports();
    schedule_tick();
  });
}

void node_core::accept(std::shared_ptr<stream> s) {
  if (closed()) {
    s->close();
    return;
  }
  auto in = std::make_shared<inbound>(*this, std::move(s));
  inbound_.push_back(in);
  in->start();
}

bool node_core::supersede(const inbound& in, const node_id& run) {
  std::vector<std::shared_ptr<inbound>> older;
  bool after = false;  // inbound_ is in the order of acceptance
  for (const auto& other : inbound_) {
    if (other.get() == &in) {
      after = true;
    } else if (other->from_run(run)) {
      if (after) return false;
      older.push_back(other);
    }
  }
  for (const auto& other : older) other->retire();
  return true;
}

void node_core::forget(inbound* in) {
  std::erase_if(inbound_, [in](const auto& p) { return p.get() == in; });
}

remote_stats node_core::stats() const {
  auto get = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  return remote_stats{
      get(counters.sent),           get(counters.received),          get(counters.frames_refused),
      get(counters.undecodable),    get(counters.overflows),         get(counters.refused),
      get(counters.peers_lost),     get(counters.peers_unreachable), get(counters.bytes_sent),
      get(counters.bytes_received), get(counters.frames_sent),       get(counters.frames_received)};
}

std::vector<peer_status> node_core::peers() const {
  std::vector<std::shared_ptr<peer>> all;
  {
    std::lock_guard lock(mutex_);
    all.reserve(peers_.size());
    for (const auto& [address, p] : peers_) all.push_back(p);
  }
  std::vector<peer_status> out;
  out.reserve(all.size());
  for (const auto& p : all) out.push_back(p->status());
  std::sort(out.begin(), out.end(), [](const peer_status& a, const peer_status& b) {
    return to_string(a.address) < to_string(b.address);
  });
  return out;
}

std::shared_ptr<peer> node_core::known_peer(const node_address& address) {
  std::lock_guard lock(mutex_);
  auto it = peers_.find(address);
  return it == peers_.end() ? nullptr : it->second;
}

void node_core::node_left(const node_address& address, std::string reason, bool graceful) {
  if (closed()) return;
  auto p = known_peer(address);
  if (!p) return;  // nothing here depends on it
  post_io([p = std::move(p), reason = std::move(reason), graceful] { p->left(reason, graceful); });
}

void node_core::node_joined(const node_address& address) {
  if (closed()) return;
  auto p = known_peer(address);
  if (!p) return;  // nothing here marks it left
  post_io([p = std::move(p)] { p->rejoined(); });
}

void node_core::left_cluster(std::string reason) {
  if (closed()) return;
  post_io([self = shared_from_this(), reason = std::move(reason)] {
    self->left_reason_ = reason;
    std::vector<std::shared_ptr<peer>> peers;
    {
      std::lock_guard lock(self->mutex_);
      for (const auto& [address, p] : self->peers_) peers.push_back(p);
    }
    for (auto& p : peers) p->fail_asks(reason);
  });
}

troupe::dead_letter_office& node_core::dead_letters() noexcept {
  return troupe::detail::dead_letters_of(*anchor_->owner());
}

}  // namespace troupe::cluster::detail

namespace troupe::cluster {

remote_node::remote_node(actor_system& system, remote_options options)
    : core_(std::make_shared<detail::node_core>(system, std::move(options))) {
  core_->start();
}

remote_node::~remote_node() { shutdown(); }

node_id remote_node::self() const { return core_->self(); }

void remote_node::expose(const untyped_ref& ref) { core_->expose(ref); }

remote_stats remote_node::stats() const { return core_->stats(); }

std::vector<peer_status> remote_node::peers() const { return core_->peers(); }

std::shared_ptr<const message_registry> remote_node::registry() const {
  return core_->options().registry;
}

void remote_node::shutdown() { core_->shutdown(); }

void remote_node::follow_membership() { core_->follow_membership(); }

void remote_node::node_left(const node_address& address, std::string reason, bool graceful) {
  core_->node_left(address, std::move(reason), graceful);
}

void remote_node::node_joined(const node_address& address) { core_->node_joined(address); }

void remote_node::left_cluster(std::string reason) { core_->left_cluster(std::move(reason)); }

}  // namespace troupe::cluster
