// ctest-labels: concurrency
// The dashboard end to end: a cluster of three nodes in process (the memory network, the
// in-process model of etcd), a management server on node a, and headless Chromium loading
// /dashboard. The DOM it dumps must show the three members, each shard's owner as the cluster
// reports it, the hot id of a skewed load, and a shard moving off node c when c leaves. Chromium
// runs on virtual time, which stands still while a fetch is pending: holding one of the page's
// reads of the shards while c leaves makes the page see the map before and after the move.
#include <troupe/cluster/cluster_messages.hpp>
#include <troupe/cluster/cluster_node.hpp>
#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/cluster/memory_network.hpp>
#include <troupe/cluster/remote_node.hpp>
#include <troupe/core/metrics.hpp>
#include <troupe/observability/cluster_management_source.hpp>
#include <troupe/observability/management_server.hpp>
#include <troupe/observability/sharding_metrics.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/sharding/shard_id.hpp>
#include <troupe/testkit/test_probe.hpp>

#include "cluster/support/io_thread.hpp"
#include "observability/support/visited_member.hpp"

#include <boost/describe/class.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

namespace troupe::observability {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using sharding::cluster_sharding;
using sharding::sharding_options;
using troupe::testkit::await_condition;
using troupe::testkit::dilated;

constexpr const char* chromium = "/usr/bin/chromium";
constexpr std::uint32_t num_shards = 48;

using test::member;
using test::visit;

/// The real source, with a gate on the reads of shards: hold_read(k) makes the k-th read from
/// now wait until release() (or 30 s), so the test can change the cluster while the page waits.
class gated_source final : public management_source {
 public:
  explicit gated_source(std::shared_ptr<management_source> inner) : inner_(std::move(inner)) {}

  management_result<members_view> members() override { return inner_->members(); }
  management_result<types_view> types() override { return inner_->types(); }
  management_result<shards_view> shards(const std::string& type) override {
    {
      std::unique_lock lock(mutex_);
      ++reads_;
      if (reads_ == hold_at_) {
        holding_ = true;
        changed_.notify_all();
        changed_.wait_for(lock, dilated(30s), [&] { return released_; });
      }
    }
    auto answer = inner_->shards(type);
    std::lock_guard lock(mutex_);
    last_ = answer;
    return answer;
  }
  management_result<entity_view> entity(const std::string& type, const std::string& id) override {
    return inner_->entity(type, id);
  }
  readiness_view readiness() override { return inner_->readiness(); }
  std::optional<std::string> metrics_text() override { return inner_->metrics_text(); }
  management_result<leave_view> leave() override { return inner_->leave(); }
  management_result<void> rebalance(const std::string& type) override {
    return inner_->rebalance(type);
  }

  /// The source itself, for the test's own reads (neither counted nor held).
  management_source& inner() { return *inner_; }
  /// The last answer to a read of the shards: what the page shows after its last poll.
  std::optional<management_result<shards_view>> last_answer() {
    std::lock_guard lock(mutex_);
    return last_;
  }

  void hold_read(int k) {
    std::lock_guard lock(mutex_);
    hold_at_ = reads_ + k;
  }
  bool holding() {
    std::lock_guard lock(mutex_);
    return holding_;
  }
  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }

 private:
  std::shared_ptr<management_source> inner_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int reads_ = 0;
  int hold_at_ = 0;
  bool holding_ = false;
  bool released_ = false;
  std::optional<management_result<shards_view>> last_;
};

/// An element of the dumped DOM: its tag name and attributes.
struct dom_element {
  std::string tag;
  std::map<std::string, std::string> attributes;
  [[nodiscard]] std::string at(const std::string& name) const {
    const auto it = attributes.find(name);
    return it == attributes.end() ? std::string() : it->second;
  }
};

/// The start tags of `html` named `tag` that carry the attribute `marker`.
std::vector<dom_element> elements(const std::string& html, const std::string& tag,
                                  const std::string& marker) {
  static const std::regex attribute(R"re(([a-zA-Z-]+)="([^"]*)")re");
  const std::regex start_tag("<" + tag + R"re((\s[^>]*)>)re");
  std::vector<dom_element> out;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), start_tag);
       it != std::sregex_iterator(); ++it) {
    dom_element e{tag, {}};
    const std::string text = (*it)[1];
    for (auto a = std::sregex_iterator(text.begin(), text.end(), attribute);
         a != std::sregex_iterator(); ++a) {
      e.attributes[(*a)[1]] = (*a)[2];
    }
    if (e.attributes.contains(marker)) out.push_back(std::move(e));
  }
  return out;
}

/// The owner of every shard that has one, in an answer of node a's source.
std::map<std::string, std::string> owners_in(
    const std::optional<management_result<shards_view>>& shards) {
  EXPECT_TRUE(shards && *shards) << "no answer, or an error";
  std::map<std::string, std::string> out;
  if (!shards || !*shards) return out;
  for (const auto& s : (*shards)->shards) {
    if (!s.owner.empty()) out[std::to_string(s.shard)] = s.owner;
  }
  return out;
}

/// The owners the page's map shows (shards without an owner left out, as the cluster does).
std::map<std::string, std::string> owners_shown(const std::string& dom) {
  std::map<std::string, std::string> out;
  for (const auto& cell : elements(dom, "div", "data-shard")) {
    if (!cell.at("data-owner").empty()) out[cell.at("data-shard")] = cell.at("data-owner");
  }
  return out;
}

class Dashboard : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(chromium)) GTEST_SKIP() << chromium << " is not installed (scripts/setup.sh)";
    dir_ =
        fs::temp_directory_path() /
        ("troupe-dashboard-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(dir_);
    for (const char* name : {"a", "b", "c"}) {
      nodes_[name] = std::make_unique<member>(net_, etcd_, io_, name, count_, num_shards);
    }
    await_condition(
        [&] {
          for (auto& [name, m] : nodes_) {
            if (!m->node->ready("visited")) return false;
          }
          return true;
        },
        10s, "every region ready");
    await_condition(
        [&] {
          std::size_t most = 0;
          for (auto& [name, m] : nodes_) most = std::max(most, m->node->hosting_regions("visited"));
          return most == 3;
        },
        10s, "the leading coordinator places shards on all three regions");
    metrics_ = std::make_unique<sharding_metrics>(
        registry_, cluster_sharding::get(nodes_["a"]->system), nodes_["a"]->system);
    source_ = std::make_shared<gated_source>(make_cluster_management_source(
        nodes_["a"]->node, cluster_sharding::get(nodes_["a"]->system), &registry_));
    server_ = management_server::start(source_, management_options{}.with_port(0));
  }
  void TearDown() override {
    if (source_) source_->release();
    server_.reset();
    source_.reset();
    metrics_.reset();
    for (const char* name : {"c", "b", "a"}) nodes_.erase(name);
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  /// Runs Chromium on the dashboard for `budget` of virtual time and returns the DOM it dumps;
  /// `extra` adds flags (a screenshot). Bounded by `timeout` in real time.
  std::string browse(const std::string& run, std::chrono::milliseconds budget,
                     const std::string& extra = "") {
    const std::string url =
        "http://127.0.0.1:" + std::to_string(server_->port()) + "/dashboard?type=visited";
    const fs::path out = dir_ / (run + ".html");
    const fs::path log = dir_ / (run + ".log");
    const std::string command =
        "timeout -k 5 60 " + std::string(chromium) +
        " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run"
        " --hide-scrollbars --user-data-dir='" +
        (dir_ / ("profile-" + run)).string() +
        "' --virtual-time-budget=" + std::to_string(budget.count()) + " " + extra +
        " --dump-dom '" + url + "' > '" + out.string() + "' 2> '" + log.string() + "'";
    const int status = std::system(command.c_str());
    EXPECT_EQ(status, 0) << command << "\n(see " << log << ")";
    std::ifstream in(out);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  /// Sends `n` visits to `id` through node a and waits for them.
  void visit_many(const std::string& id, int n) {
    const int before = count_->load();
    for (int i = 0; i < n; ++i) nodes_["a"]->region.tell(visit{id});
    await_condition([&] { return count_->load() >= before + n; }, 20s, "the visits delivered");
  }

  /// An id whose shard node a hosts.
  std::string id_hosted_on_a() {
    for (int i = 0; i < 1000; ++i) {
      const std::string id = "hot-" + std::to_string(i);
      const auto e = source_->entity("visited", id);
      if (e && e->owner == "a") return id;
    }
    ADD_FAILURE() << "no id of the first 1000 lives on a";
    return {};
  }

  cluster::memory_network net_{11};
  cluster::test::io_thread io_;
  std::shared_ptr<troupe::clock> clock_ = make_steady_clock();
  cluster::in_process_etcd etcd_{clock_};
  std::shared_ptr<std::atomic<int>> count_ = std::make_shared<std::atomic<int>>(0);
  metrics_registry registry_;
  std::map<std::string, std::unique_ptr<member>> nodes_;
  std::unique_ptr<sharding_metrics> metrics_;
  std::shared_ptr<gated_source> source_;
  std::unique_ptr<management_server> server_;
  fs::path dir_;
};

TEST_F(Dashboard, ShowsMembersOwnersAHotKeyAndAMoveWhenANodeLeaves) {
  // Every shard gets an owner, then one id of a shard on a gets most of the traffic.
  for (int i = 0; i < 400; ++i) nodes_["a"]->region.tell(visit{"user-" + std::to_string(i)});
  await_condition([&] { return count_->load() >= 400; }, 20s, "the spread visits delivered");
  const std::string hot = id_hosted_on_a();
  ASSERT_FALSE(hot.empty());
  visit_many(hot, 4000);
  const auto hot_shard = std::to_string(sharding::shard_of(hot, num_shards));

  // The first look: members, owners as the cluster reports them, the hot id on its shard.
  const std::string first = browse("first", 3000ms);
  std::set<std::string> members;
  for (const auto& row : elements(first, "tr", "data-node")) {
    members.insert(row.at("data-node"));
    EXPECT_EQ(row.at("data-state"), "up") << row.at("data-node");
  }
  EXPECT_EQ(members, (std::set<std::string>{"a", "b", "c"})) << first;
  const auto cells = elements(first, "div", "data-shard");
  EXPECT_EQ(cells.size(), num_shards);
  const auto shown = owners_shown(first);
  // The cluster may rebalance at any time: compare with what it answered the page last.
  EXPECT_EQ(shown, owners_in(source_->last_answer()));
  std::set<std::string> owners;
  for (const auto& [shard, owner] : shown) owners.insert(owner);
  ASSERT_TRUE(owners.contains("c")) << "c must own a shard for the move to show";
  bool hot_named = false;
  for (const auto& cell : cells) {
    if (cell.at("data-shard") == hot_shard) hot_named = cell.at("data-hot-key") == hot;
  }
  EXPECT_TRUE(hot_named) << "shard " << hot_shard << " names " << hot << "\n" << first;

  // The second look spans c's leave: the page's third read of the shards waits until every
  // shard has left c. A sender keeps the hot id busy so the load bars show a spike.
  std::jthread sender([&](const std::stop_token& stop) {
    while (!stop.stop_requested()) {
      for (int i = 0; i < 20; ++i) nodes_["a"]->region.tell(visit{hot});
      std::this_thread::sleep_for(5ms);  // pacing the load, not waiting for a result
    }
  });
  source_->hold_read(3);
  const fs::path screenshot = fs::current_path() / "dashboard.png";
  auto second = std::async(std::launch::async, [&] {
    return browse("second", 6000ms,
                  "--window-size=1280,860 --screenshot='" + screenshot.string() + "'");
  });
  await_condition([&] { return source_->holding(); }, 30s, "the page's third read of the shards");
  nodes_["c"]->node->leave();
  await_condition(
      [&] {
        const auto now = owners_in(source_->inner().shards("visited"));
        return now.size() == shown.size() &&
               std::all_of(now.begin(), now.end(), [](const auto& s) { return s.second != "c"; });
      },
      30s, "every shard of c handed to a or b");
  source_->release();
  ASSERT_EQ(second.wait_for(dilated(60s)), std::future_status::ready);
  const std::string after = second.get();
  sender.request_stop();

  const auto last = owners_in(source_->last_answer());
  EXPECT_EQ(owners_shown(after), last);
  for (const auto& [shard, owner] : last) EXPECT_NE(owner, "c") << shard;
  // Moves between a and b may follow (the coordinator rebalances); those off c must be there.
  int moves_off_c = 0;
  for (const auto& event : elements(after, "li", "data-kind")) {
    const auto kind = event.at("data-kind");
    if ((kind != "handoff" && kind != "failover") || event.at("data-from") != "c") continue;
    ++moves_off_c;
    EXPECT_TRUE(event.at("data-to") == "a" || event.at("data-to") == "b") << event.at("data-to");
    const auto now = last.find(event.at("data-shard"));
    EXPECT_TRUE(now != last.end() && now->second != "c") << "shard " << event.at("data-shard");
  }
  EXPECT_GT(moves_off_c, 0) << after;
  EXPECT_TRUE(fs::exists(screenshot));
  std::cout << "dashboard screenshot: " << screenshot << "\n";
}

}  // namespace
}  // namespace troupe::observability
