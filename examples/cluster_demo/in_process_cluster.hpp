#pragma once
// The demo's nodes in this one process (scripts/demo.sh): TCP on 127.0.0.1, etcd modelled
// in-process, one SQLite journal in a temporary directory shared through one plugin, and one
// activation registry that sees every node.

#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/persistence/plugin.hpp>

#include "demo_cluster.hpp"
#include "node.hpp"
#include "temp_dir.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace cluster_demo {

class in_process_cluster final : public demo_cluster {
 public:
  explicit in_process_cluster(std::uint32_t shards);
  ~in_process_cluster() override;
  in_process_cluster(const in_process_cluster&) = delete;
  in_process_cluster& operator=(const in_process_cluster&) = delete;

  [[nodiscard]] std::string intro() const override;
  void open(console& out, demo_clock::time_point t0) override;
  std::string start(const std::string& name) override;
  bool wait_regions(std::size_t regions, std::chrono::milliseconds limit) override;
  [[nodiscard]] std::string front_name() const override { return "node a"; }
  [[nodiscard]] troupe::actor_ref<cart_command> front() override;
  [[nodiscard]] troupe::cluster::cluster_node& reader() override;
  std::optional<std::string> leave(const std::string& name,
                                   std::chrono::milliseconds limit) override;
  std::string stop(const std::string& name) override;
  [[nodiscard]] std::string kill_text() const override;
  void kill(const std::string& name) override;
  [[nodiscard]] activation_counts activations() override;
  void close() override;

 private:
  std::uint32_t shards_;
  // Declared in the order they must outlive each other: the nodes go first, then the journal,
  // then the directory holding it.
  temp_dir dir_{"troupe-cluster-demo"};
  io_thread io_;  // before the clock: the model's timers on the clock hold the io's strands
  std::shared_ptr<troupe::clock> clock_ = troupe::make_steady_clock();
  troupe::cluster::in_process_etcd etcd_{clock_};
  std::shared_ptr<troupe::persistence::plugin> journal_;
  activation_registry activations_;
  std::map<std::string, std::unique_ptr<demo_node>> nodes_;
};

}  // namespace cluster_demo
