#pragma once
// The nodes of troupe_bench_cluster's in-process cases: the `hit` message and the `counter`
// entity that counts it into shared tallies, the consensus store a run uses (the in-process
// model, or a real etcd under a cluster name of its own), and one cluster node with its system,
// remoting and membership.

#include <troupe/cluster/cluster_messages.hpp>
#include <troupe/cluster/cluster_node.hpp>
#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/cluster/remote_node.hpp>
#include <troupe/cluster/tcp_transport.hpp>
#include <troupe/core/actor.hpp>
#include <troupe/sharding/cluster_sharding.hpp>

#include "bench_support.hpp"
#include "cluster_support.hpp"
#include "shared_tallies.hpp"

#include <boost/describe/class.hpp>

#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace troupe::bench {

namespace tc = troupe::cluster;

struct hit {
  std::string id;
};
BOOST_DESCRIBE_STRUCT(hit, (), (id))

inline std::vector<std::string> make_ids(std::int64_t count) {
  std::vector<std::string> ids;
  ids.reserve(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) ids.push_back("e" + std::to_string(i));
  return ids;
}

/// What every entity (or the one plain actor) of a run reports to.
using tallies = shared_tallies;

class counter final : public troupe::actor<hit> {
 public:
  explicit counter(tallies* t) : tallies_(t) {}

 private:
  void receive(hit& h) override {
    std::size_t n = 0;
    std::from_chars(h.id.data() + 1, h.id.data() + h.id.size(), n);
    tallies_->per_id(n).fetch_add(1, std::memory_order_relaxed);
    tallies_->handled().fetch_add(1, std::memory_order_release);
  }
  tallies* tallies_;
};

/// Waits until `t` counts `n` handled messages.
inline void wait_handled(const tallies& t, std::int64_t n, const std::string& what) {
  const auto deadline = steady::now() + wait_limit;
  while (t.handled().load(std::memory_order_acquire) < n) {
    if (steady::now() > deadline) {
      throw bench_failure("timed out waiting for " + what + " (" +
                          std::to_string(n - t.handled().load()) + " outstanding)");
    }
    std::this_thread::yield();
  }
}

/// Tells `messages` hits round-robin over `ids` to `to`, keeping at most `window` unhandled
/// (0: no bound); returns the msgs/s from the first tell until the last is handled.
inline double tell_all(const troupe::actor_ref<hit>& to, const std::vector<std::string>& ids,
                       std::int64_t messages, std::int64_t window, tallies& t) {
  const std::int64_t before = t.handled().load();
  std::int64_t seen = before;  // read again only at the window: the entities write it
  const auto start = steady::now();
  for (std::int64_t i = 0; i < messages; ++i) {
    while (window > 0 && before + i - seen >= window) {
      seen = t.handled().load(std::memory_order_acquire);
      if (before + i - seen >= window) std::this_thread::yield();
    }
    to.tell(hit{ids[static_cast<std::size_t>(i) % ids.size()]});
  }
  wait_handled(t, before + messages, "every message to be handled");
  return static_cast<double>(messages) / seconds_between(start, steady::now());
}

/// Every node's consensus store, served from its own thread: the in-process model of etcd, or
/// (with `endpoints`) a real etcd under a cluster name of its own.
struct etcd_model {
  /// With `endpoints`, a cluster name of its own unless `shared_cluster` names one that another
  /// process (a node of the same run) uses too.
  explicit etcd_model(std::vector<std::string> endpoints = {}, std::string shared_cluster = {})
      : endpoints(std::move(endpoints)) {
    static std::atomic<int> runs{0};
    if (!shared_cluster.empty()) {
      cluster = std::move(shared_cluster);
    } else if (!this->endpoints.empty()) {
      cluster = "bench-" + std::to_string(::getpid()) + "-" + std::to_string(++runs);
    }
  }
  // The thread stops before the model and the clock go; the io_context, whose strands the
  // clock's timers hold, after them.
  ~etcd_model() { runner.stop(); }
  etcd_model(const etcd_model&) = delete;
  etcd_model& operator=(const etcd_model&) = delete;
  std::shared_ptr<tc::consensus_store> client() {
    if (endpoints.empty()) return etcd.client(runner.io.get_executor());
    return tc::make_etcd_store(runner.io.get_executor(), {endpoints});
  }

  std::vector<std::string> endpoints;
  std::string cluster = "bench";
  io_runner runner;
  std::shared_ptr<troupe::clock> clock = troupe::make_steady_clock();
  tc::in_process_etcd etcd{clock};
};

inline std::shared_ptr<tc::message_registry> messages() {
  auto r = std::make_shared<tc::message_registry>();
  tc::add_cluster_messages(*r);
  r->add<hit>("bench.hit");
  return r;
}

/// One cluster node: its system, remoting and membership.
struct cluster_member {
  cluster_member(const std::string& name, std::size_t workers, etcd_model& model,
                 tc::transport_factory transport, tc::node_address bind,
                 const std::function<void(tc::cluster_node_options&)>& tune = {})
      : system(bench_config(workers).with_name(name)),
        remote(system, tc::remote_options{}
                           .with_cluster_name(model.cluster)
                           .with_bind(std::move(bind))
                           .with_registry(messages())
                           .with_transport(std::move(transport))) {
    auto options = tc::cluster_node_options{}.with_cluster_name(model.cluster).with_node(name);
    options.retry = std::chrono::milliseconds(100);
    if (tune) tune(options);
    cluster = tc::cluster_node::join(system, troupe::sharding::cluster_sharding::get(system),
                                     remote, model.client(), std::move(options), model.clock);
    cluster->joined().get();
  }
  ~cluster_member() {
    cluster.reset();
    remote.shutdown();
  }
  troupe::actor_ref<hit> start(tallies* t, bool proxy,
                               std::uint32_t shards = troupe::sharding::default_number_of_shards) {
    auto options = troupe::sharding::sharding_options<hit>::create()
                       .with_type_name("counter")
                       .with_extract_entity_id([](const hit& h) { return h.id; })
                       .with_passivation_idle(duration::zero())
                       .with_num_shards(shards);
    if (proxy) {
      options.with_proxy();
    } else {
      options.with_entity<counter>(t);
    }
    return troupe::sharding::cluster_sharding::get(system).start(std::move(options));
  }

  troupe::actor_system system;
  tc::remote_node remote;
  std::shared_ptr<tc::cluster_node> cluster;
};

/// TCP, the transport of the cases whose nodes talk over 127.0.0.1.
inline tc::transport_factory tcp() {
  return [](boost::asio::any_io_executor ex) {
    return std::make_shared<tc::tcp_transport>(ex, tc::tcp_options{});
  };
}

/// Tells hits round-robin over `ids` from its own thread, at most 64 not yet `handled()`.
class sender {
 public:
  sender(troupe::actor_ref<hit> to, const std::vector<std::string>& ids,
         std::function<std::int64_t()> handled)
      : to_(std::move(to)), ids_(ids), handled_(std::move(handled)), thread_([this] { run(); }) {}
  ~sender() { stop(); }
  sender(const sender&) = delete;
  sender& operator=(const sender&) = delete;

  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  [[nodiscard]] std::int64_t sent() const { return sent_.load(); }

 private:
  void run() {
    constexpr std::int64_t window = 64;
    for (std::int64_t i = 0; !stop_; ++i) {
      while (!stop_ && sent_.load() - handled_() >= window) std::this_thread::yield();
      to_.tell(hit{ids_[static_cast<std::size_t>(i) % ids_.size()]});
      sent_.fetch_add(1);
    }
  }

  troupe::actor_ref<hit> to_;
  const std::vector<std::string>& ids_;
  std::function<std::int64_t()> handled_;
  std::atomic<bool> stop_{false};
  std::atomic<std::int64_t> sent_{0};
  std::thread thread_;
};

/// Waits until `done()`, for at most `limit`; throws bench_failure naming `what` after it.
template <class Done>
void wait_for(Done done, troupe::duration limit, const std::string& what) {
  const auto give_up = steady::now() + limit;
  while (!done()) {
    if (steady::now() > give_up) throw bench_failure("timed out waiting for " + what);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace troupe::bench
