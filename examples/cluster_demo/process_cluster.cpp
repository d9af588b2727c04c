#include "process_cluster.hpp"

#include <troupe/cluster/membership/consensus_store.hpp>
#include <troupe/persistence/sqlite_plugin.hpp>

#include "activation_log.hpp"
#include "endpoints.hpp"
#include "runtime_log.hpp"

#include <signal.h>
#include <unistd.h>

#include <exception>
#include <future>
#include <stdexcept>
#include <thread>
#include <utility>

namespace cluster_demo {

namespace tc = troupe::cluster;
using namespace std::chrono_literals;

process_cluster::process_cluster(std::string etcd, std::uint32_t shards)
    : etcd_(std::move(etcd)),
      shards_(shards),
      // A cluster of its own in etcd: keys of an earlier run (or another one) are not ours.
      cluster_name_("shop-" + std::to_string(::getpid())) {}

process_cluster::~process_cluster() {
  close();
  io_.reset();
}

std::string process_cluster::intro() const {
  return "Nodes a, b and c are processes of their own (TCP on 127.0.0.1, a real etcd at\n" + etcd_ +
         "); this process is the driver, a proxy node that routes carts and hosts none.\n"
         "Under load, node d starts and joins, node b gets SIGTERM and leaves gracefully, and\n"
         "node c gets SIGKILL; then every cart is read back and checked against what was\n"
         "acknowledged.\n\n";
}

void process_cluster::open(console& out, demo_clock::time_point t0) {
  dir_ = std::make_unique<temp_dir>("troupe-cluster-demo");
  const auto journal = dir_->path / "carts.db";
  // The schema, once, before several processes open the file.
  (void)troupe::persistence::open_sqlite_plugin({.file = journal});
  out.line("  " + since(t0) + "  journal: " + journal.string() + " (one file, every process)");
  io_ = std::make_unique<io_thread>();
  node_parts parts;
  parts.cluster_name = cluster_name_;
  parts.store = tc::make_etcd_store(io_->executor(), {split_endpoints(etcd_)});
  parts.shards = shards_;
  driver_ = std::make_unique<demo_node>("driver", std::move(parts));
  out.line("  " + since(t0) + "  the driver joined cluster " + cluster_name_ +
           " as a proxy node, listening on " + driver_->address());
}

std::string process_cluster::start(const std::string& name) {
  const auto log = dir_->path / ("activations-" + name + ".log");
  auto child = std::make_unique<child_process>(
      std::vector<std::string>{"--node", name, "--etcd", etcd_, "--cluster", cluster_name_,
                               "--journal", (dir_->path / "carts.db").string(), "--activation-log",
                               log.string(), "--parent", std::to_string(::getpid())},
      [](const std::string& line) { relay_runtime_line(line); });
  const auto ready = child->wait_line("ready ", 30s);
  if (!ready) {
    child->signal(SIGKILL);
    child->wait_exit(10s);
    throw std::runtime_error("node " + name + " did not start (its process " +
                             child->how_it_ended().value_or("did not end") + ")");
  }
  const std::string at = *ready + " (pid " + std::to_string(child->pid()) + ")";
  children_[name] = std::move(child);
  logs_[name] = log;
  return at;
}

bool process_cluster::wait_regions(std::size_t regions, std::chrono::milliseconds limit) {
  const auto give_up = demo_clock::now() + limit;
  for (;;) {
    auto state = driver_->cluster().read_state();
    if (state.wait_for(2s) == std::future_status::ready) {
      try {
        for (const auto& t : state.get().types) {
          if (t.type != "cart" || t.coordinator.empty()) continue;
          std::size_t hosting = 0;
          for (const auto& r : t.regions) hosting += r.proxy ? 0 : 1;
          if (hosting == regions) {
            // The coordinator learns of a region through its watch a moment after the region
            // is registered.
            std::this_thread::sleep_for(500ms);
            return true;
          }
        }
      } catch (const std::exception&) {
        // read again
      }
    }
    if (demo_clock::now() > give_up) return false;
    std::this_thread::sleep_for(50ms);
  }
}

troupe::actor_ref<cart_command> process_cluster::front() { return driver_->carts(); }

tc::cluster_node& process_cluster::reader() { return driver_->cluster(); }

std::optional<bool> process_cluster::is_member(const std::string& name) {
  auto state = driver_->cluster().read_state();
  if (state.wait_for(2s) != std::future_status::ready) return std::nullopt;
  try {
    for (const auto& m : state.get().members) {
      if (m.info.id.node == name) return true;
    }
    return false;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<std::string> process_cluster::leave(const std::string& name,
                                                  std::chrono::milliseconds limit) {
  // run_until_signal makes the node leave: its shards are handed off, then its lease is
  // revoked, which takes its member key with it.
  children_.at(name)->signal(SIGTERM);
  const auto give_up = demo_clock::now() + limit;
  while (is_member(name).value_or(true)) {
    if (demo_clock::now() > give_up) return std::nullopt;
    std::this_thread::sleep_for(20ms);
  }
  return " (its member key is gone)";
}

std::string process_cluster::reap(const std::string& name, std::chrono::milliseconds limit,
                                  int expected) {
  auto& child = *children_.at(name);
  if (!child.wait_exit(limit)) {
    problems_.push_back("node " + name + "'s process did not end within " +
                        std::to_string(limit.count() / 1000) + " s: killed");
    child.signal(SIGKILL);
    child.wait_exit(10s);
  }
  const std::string how = child.how_it_ended().value_or("did not end");
  if (!child.ended_cleanly(expected)) problems_.push_back("node " + name + "'s process " + how);
  return " (its process " + how + ")";
}

std::string process_cluster::stop(const std::string& name) { return reap(name, 15s, SIGTERM); }

std::string process_cluster::kill_text() const {
  return "node c's process gets SIGKILL; it never says goodbye";
}

void process_cluster::kill(const std::string& name) {
  killed_ = name;
  killed_ns_ = steady_ns();
  children_.at(name)->signal(SIGKILL);
  reap(name, 10s, SIGKILL);
}

activation_counts process_cluster::activations() {
  return merge_activation_logs(logs_, killed_, killed_ns_);
}

void process_cluster::close() {
  // The nodes still running leave as on a SIGTERM of their own; one that ended before is a
  // problem (it crashed).
  std::vector<std::string> running;
  for (auto& [name, child] : children_) {
    if (child->how_it_ended()) continue;
    if (child->wait_exit(0ms)) {
      problems_.push_back("node " + name + "'s process ended by itself (" +
                          child->how_it_ended().value_or("?") + ")");
      continue;
    }
    child->signal(SIGTERM);
    running.push_back(name);
  }
  for (const auto& name : running) reap(name, 15s, SIGTERM);
  children_.clear();
  driver_.reset();
  // io_ stays until the destructor: the load's refs to the driver's region keep its placement,
  // and with it a strand on io_'s context, alive until run_scenario returns; a strand must not
  // outlive its context.
}

}  // namespace cluster_demo
