#pragma once
// The demo's nodes as processes of their own (scripts/cluster-demo.sh): this process, the
// driver, joins a real etcd as a proxy node of the cart type (it routes carts and hosts none),
// and starts each node as a child: this program again with --node (node_process.hpp). The
// nodes share one SQLite file in a temporary directory (WAL) and each writes an activation log
// there. A graceful leave is SIGTERM (run_until_signal makes the node leave), the kill is
// SIGKILL. Every child is killed and reaped when the driver ends, whatever the path; a child
// whose driver dies gets SIGKILL from the kernel (PR_SET_PDEATHSIG).

#include "child_process.hpp"
#include "demo_cluster.hpp"
#include "node.hpp"
#include "temp_dir.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cluster_demo {

class process_cluster final : public demo_cluster {
 public:
  /// `etcd`: the client endpoints, "127.0.0.1:2379,...".
  process_cluster(std::string etcd, std::uint32_t shards);
  ~process_cluster() override;
  process_cluster(const process_cluster&) = delete;
  process_cluster& operator=(const process_cluster&) = delete;

  [[nodiscard]] std::string intro() const override;
  void open(console& out, demo_clock::time_point t0) override;
  std::string start(const std::string& name) override;
  bool wait_regions(std::size_t regions, std::chrono::milliseconds limit) override;
  [[nodiscard]] std::string front_name() const override { return "the driver"; }
  [[nodiscard]] troupe::actor_ref<cart_command> front() override;
  [[nodiscard]] troupe::cluster::cluster_node& reader() override;
  std::optional<std::string> leave(const std::string& name,
                                   std::chrono::milliseconds limit) override;
  std::string stop(const std::string& name) override;
  [[nodiscard]] std::string kill_text() const override;
  void kill(const std::string& name) override;
  [[nodiscard]] activation_counts activations() override;
  void close() override;
  [[nodiscard]] std::vector<std::string> problems() const override { return problems_; }

 private:
  /// Whether `name` is a member, as etcd says now; nullopt when etcd did not answer.
  std::optional<bool> is_member(const std::string& name);
  /// Reaps `name` within `limit`, killing it after; notes a problem unless it ended by itself
  /// cleanly or by `expected` signal.
  std::string reap(const std::string& name, std::chrono::milliseconds limit, int expected);

  std::string etcd_;
  std::uint32_t shards_;
  std::string cluster_name_;
  std::vector<std::string> problems_;
  // Declared in the order they must outlive each other: the children and the driver's node go
  // first, then the directory holding the journal and the logs.
  std::unique_ptr<temp_dir> dir_;
  std::unique_ptr<io_thread> io_;
  std::unique_ptr<demo_node> driver_;
  std::map<std::string, std::unique_ptr<child_process>> children_;
  std::map<std::string, std::filesystem::path> logs_;
  std::string killed_;
  std::int64_t killed_ns_ = 0;
};

}  // namespace cluster_demo
