#include "node_process.hpp"

#include <troupe/cluster/membership/consensus_store.hpp>
#include <troupe/persistence/sqlite_plugin.hpp>

#include "activation_log.hpp"
#include "endpoints.hpp"
#include "node.hpp"
#include "runtime_log.hpp"
#include "scenario.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <thread>

namespace cluster_demo {

int serve_node(const options& o) {
  // The kernel kills this process when the driver ends, however it ends; a driver that ended
  // before this line ran has made this process an orphan, which the check sees.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (o.parent != 0 && ::getppid() != static_cast<pid_t>(o.parent)) return 1;
  route_runtime_log_to_parent();
  try {
    std::unique_ptr<activation_log> log;
    if (!o.activation_log.empty()) log = std::make_unique<activation_log>(o.activation_log);
    // WAL lets every node process write the one file; `normal` keeps each acknowledged write
    // across a crash of the process (not of the machine), and a busy writer is waited for.
    troupe::persistence::sqlite_options journal;
    journal.file = o.journal;
    journal.durability = troupe::persistence::sqlite_durability::normal;
    journal.busy_timeout = std::chrono::seconds(5);
    std::shared_ptr<troupe::persistence::plugin> plugin =
        troupe::persistence::open_sqlite_plugin(journal);
    io_thread io;
    node_parts parts;
    parts.cluster_name = o.cluster;
    parts.store = troupe::cluster::make_etcd_store(io.executor(), {split_endpoints(o.etcd)});
    parts.journal = plugin;
    parts.activations = log.get();
    parts.shards = num_shards;
    // The log outlives the node, and on_fenced is never called once the node is gone.
    if (log) parts.on_fenced = [l = log.get()](const std::string&) { l->fenced(); };
    demo_node node(o.node, std::move(parts));
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!node.cluster().ready("cart")) {
      if (std::chrono::steady_clock::now() > give_up) {
        throw std::runtime_error("the cart region was not ready within 20 s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::printf("ready %s\n", node.address().c_str());
    std::fflush(stdout);
    node.system().run_until_signal();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "troupe_cluster_demo: node %s: %s\n", o.node.c_str(), e.what());
    return 1;
  }
}

}  // namespace cluster_demo
