// ctest-labels: concurrency
// The cluster singleton and the sharded daemon process on one node: they run without a message,
// the singleton's proxy reaches it, and what stops is started again by its keep-alive. (Moving
// between nodes: tests/cluster/cluster_singleton_test.cpp.)
#include <troupe/core/actor_system.hpp>
#include <troupe/sharding/singleton.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <variant>

namespace {

using namespace std::chrono_literals;
using troupe::sharding::cluster_sharding;
using troupe::sharding::daemon_process_settings;
using troupe::sharding::singleton_settings;
using troupe::testkit::await_condition;

struct whoami {};
struct fail {};
using command = std::variant<whoami, fail>;

/// Counts its starts; answers whoami with its id; throws on fail (and is stopped).
struct started_log {
  std::mutex mutex;
  std::multiset<std::string> ids;
  std::size_t count(const std::string& id) {
    std::lock_guard lock(mutex);
    return ids.count(id);
  }
  std::size_t distinct() {
    std::lock_guard lock(mutex);
    return std::set<std::string>(ids.begin(), ids.end()).size();
  }
};

class worker final : public troupe::actor<command> {
 public:
  explicit worker(started_log* log) : log_(log) {}

 private:
  void pre_start() override {
    std::lock_guard lock(log_->mutex);
    log_->ids.insert(entity_id());
  }
  void receive(command& c) override {
    if (std::holds_alternative<fail>(c)) throw std::runtime_error("planned failure");
    context().reply(entity_id());
  }
  started_log* log_;
};

TEST(Singleton, RunsWithoutAMessageAndItsProxyReachesIt) {
  troupe::actor_system system;
  started_log log;
  auto proxy = troupe::sharding::start_singleton<worker>(
      cluster_sharding::get(system), singleton_settings::named("scheduler"), &log);
  await_condition([&] { return log.count("scheduler") == 1; }, 5s, "the singleton started");
  EXPECT_EQ(proxy.ask<std::string>(whoami{}, 5s, troupe::use_future).get(), "scheduler");
  EXPECT_EQ(log.count("scheduler"), 1U) << "the message went to the running one";
}

TEST(Singleton, IsStartedAgainAfterItFails) {
  troupe::actor_system system;
  started_log log;
  auto proxy = troupe::sharding::start_singleton<worker>(
      cluster_sharding::get(system),
      singleton_settings::named("scheduler").with_keep_alive_interval(50ms), &log);
  await_condition([&] { return log.count("scheduler") == 1; }, 5s, "the singleton started");
  proxy.tell(fail{});
  // Stopped by its supervision; the keep-alive starts it again without a message.
  await_condition([&] { return log.count("scheduler") == 2; }, 5s, "the singleton restarted");
}

TEST(Singleton, NeedsAName) {
  troupe::actor_system system;
  started_log log;
  EXPECT_THROW(troupe::sharding::start_singleton<worker>(cluster_sharding::get(system),
                                                         singleton_settings::named(""), &log),
               troupe::error);
}

TEST(DaemonProcess, RunsEveryWorkerEachInItsOwnShard) {
  troupe::actor_system system;
  started_log log;
  auto& sharding = cluster_sharding::get(system);
  troupe::sharding::start_daemon_process<worker>(
      sharding, daemon_process_settings::named("indexer", 4), &log);
  await_condition([&] { return log.distinct() == 4; }, 5s, "four workers started");
  for (const std::string id : {"0", "1", "2", "3"}) {
    EXPECT_EQ(log.count(id), 1U) << id;
    const auto shard = static_cast<troupe::sharding::shard_id>(std::stoi(id));
    EXPECT_EQ(sharding.entity_ids("daemon-indexer", shard), std::vector<std::string>{id});
  }
}

TEST(DaemonProcess, NeedsWorkers) {
  troupe::actor_system system;
  started_log log;
  EXPECT_THROW(
      troupe::sharding::start_daemon_process<worker>(
          cluster_sharding::get(system), daemon_process_settings::named("indexer", 0), &log),
      troupe::error);
}

}  // namespace
