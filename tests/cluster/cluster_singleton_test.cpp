// ctest-labels: concurrency
// The cluster singleton across nodes (tests/cluster/support/tally_world.hpp): it runs on one
// node, moves when that node leaves and again when the next one crashes, never runs on two nodes
// at once, and its proxy on a node that never runs it reaches it wherever it is.
#include <troupe/sharding/singleton.hpp>

#include "support/tally_world.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <set>
#include <string>

namespace troupe::cluster {
namespace {

using namespace tally_test;

/// The singleton: logs its starts and stops with its node's label, answers with that label.
class leader final : public troupe::actor<tally_command> {
 public:
  leader(std::string label, std::shared_ptr<activity> log)
      : label_(std::move(label)), log_(std::move(log)) {}

 private:
  void pre_start() override { log_->record(activity::entry::start, label_, entity_id()); }
  void post_stop() override { log_->record(activity::entry::stop, label_, entity_id()); }
  void receive(tally_command&) override {
    log_->record(activity::entry::handle, label_, entity_id(), "list");
    context().reply(tally_reply{label_, {}});
  }
  std::string label_;
  std::shared_ptr<activity> log_;
};

struct host {
  host(world& w, const std::string& name)
      : m(w, name, 1, false, nullptr, [](cluster_node_options& o) { o.with_handoff_timeout(5s); }),
        proxy(sharding::start_singleton<leader>(
            cluster_sharding::get(m.node.system),
            sharding::singleton_settings::named("leader").with_keep_alive_interval(200ms), m.label,
            w.log)) {}
  member m;
  troupe::actor_ref<tally_command> proxy;
};

/// The labels the singleton started on, in order.
std::vector<std::string> starts(activity& log) {
  std::lock_guard lock(log.mutex);
  std::vector<std::string> labels;
  for (const auto& e : log.entries) {
    if (e.what == activity::entry::start && e.id == "leader") labels.push_back(e.label);
  }
  return labels;
}

std::optional<std::string> answered_by(const troupe::actor_ref<tally_command>& proxy) {
  try {
    return proxy.ask<tally_reply>(tally_command{list{"any"}}, 1s, troupe::use_future).get().label;
  } catch (const std::exception&) {
    return std::nullopt;  // it is moving
  }
}

TEST(cluster_singleton, moves_on_a_leave_and_on_a_crash_and_never_runs_twice) {
  world w(51);
  std::map<std::string, std::unique_ptr<host>> hosts;
  for (const auto& name : {"a", "b", "c"}) hosts[name] = std::make_unique<host>(w, name);
  member gate(w, "gate", 1, true);
  auto proxy = sharding::start_singleton_proxy<tally_command>(
      cluster_sharding::get(gate.node.system), sharding::singleton_settings::named("leader"));
  ASSERT_TRUE(holds_within([&] { return starts(*w.log).size() == 1; }, 10s))
      << "it starts on one node without a message";
  const std::string first = starts(*w.log).front();
  EXPECT_TRUE(holds_within([&] { return answered_by(proxy) == first; }, 10s));

  // Its node leaves: it moves to another node.
  hosts[first.substr(0, 1)]->m.cluster->leave();
  ASSERT_TRUE(holds_within([&] { return starts(*w.log).size() == 2; }, 20s)) << "it moved";
  const std::string second = starts(*w.log).back();
  EXPECT_NE(second, first);
  EXPECT_TRUE(holds_within([&] { return answered_by(proxy) == second; }, 10s));

  // The next node crashes: once its lease runs out, the last node runs it.
  auto& crashed = hosts[second.substr(0, 1)];
  w.etcd.set_reachable(*crashed->m.store, false);
  for (const auto& [name, h] : hosts) {
    if (h && h != crashed) w.net.memory().partition(crashed->m.node.address(), h->m.node.address());
  }
  w.net.memory().partition(crashed->m.node.address(), gate.node.address());
  crashed.reset();
  ASSERT_TRUE(holds_within([&] { return starts(*w.log).size() == 3; }, 20s)) << "it failed over";
  const std::string third = starts(*w.log).back();
  EXPECT_EQ(std::set<std::string>({first, second, third}).size(), 3U);
  EXPECT_TRUE(holds_within([&] { return answered_by(proxy) == third; }, 10s));

  const auto stale = stale_activations(*w.log);
  EXPECT_TRUE(stale.empty()) << stale.front();
}

}  // namespace
}  // namespace troupe::cluster
