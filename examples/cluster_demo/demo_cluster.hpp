#pragma once
// The nodes of a demo run, as the scenario (scenario.hpp) drives them: all in this process
// (in_process_cluster.hpp) or one process per node under a real etcd (process_cluster.hpp). The
// scenario is the same either way; only how a node starts, leaves, dies and reports its
// activations differs.

#include <troupe/cluster/cluster_node.hpp>
#include <troupe/core/actor_ref.hpp>

#include "activations.hpp"
#include "cart.hpp"
#include "console.hpp"

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace cluster_demo {

class demo_cluster {
 public:
  virtual ~demo_cluster() = default;

  /// The opening paragraph after the line naming the carts: where the nodes run.
  [[nodiscard]] virtual std::string intro() const = 0;
  /// Sets up what the nodes share, printing a line for each part; throws when it cannot.
  virtual void open(console& out, demo_clock::time_point t0) = 0;
  /// Starts node `name` (hosting carts) and waits until it has joined; what the "joined,
  /// listening on" line says. Throws when the node does not start.
  virtual std::string start(const std::string& name) = 0;
  /// Waits until the leading coordinator places shards on `regions` regions; false after
  /// `limit`.
  virtual bool wait_regions(std::size_t regions, std::chrono::milliseconds limit) = 0;
  /// Who the clients ask through ("node a"), and its region.
  [[nodiscard]] virtual std::string front_name() const = 0;
  [[nodiscard]] virtual troupe::actor_ref<cart_command> front() = 0;
  /// The node whose view of the cluster the shard watcher reads; lives until close().
  [[nodiscard]] virtual troupe::cluster::cluster_node& reader() = 0;
  /// Makes `name` leave gracefully and waits until it has, at most `limit`: nullopt when it did
  /// not, otherwise what to add to the "left" line.
  virtual std::optional<std::string> leave(const std::string& name,
                                           std::chrono::milliseconds limit) = 0;
  /// Stops a node that left; what to add to the "stopped" line.
  virtual std::string stop(const std::string& name) = 0;
  /// What the kill does, for the phase banner.
  [[nodiscard]] virtual std::string kill_text() const = 0;
  /// Kills `name`: it never says goodbye.
  virtual void kill(const std::string& name) = 0;
  /// The duplicate-activation check, once the load has stopped.
  [[nodiscard]] virtual activation_counts activations() = 0;
  /// Stops every node.
  virtual void close() = 0;
  /// What went wrong with the nodes themselves (a process that ended by itself...).
  [[nodiscard]] virtual std::vector<std::string> problems() const { return {}; }
};

}  // namespace cluster_demo
