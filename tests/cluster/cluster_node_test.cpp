// ctest-labels: concurrency
// Nodes joining a cluster on the in-memory network, on the in-process model of etcd and on a
// real etcd (TROUPE_ETCD_ENDPOINTS): a sharded type started on each is placed by the elected
// coordinator, each node hosts only the shards allocated to it (at the allocation's epoch), a
// message sent to any node's region reaches its entity on the node that hosts the shard, and
// when a node leaves, its shards move and the messages that waited for them are delivered on
// the node that now hosts them, in order.
#include <troupe/cluster/cluster_messages.hpp>
#include <troupe/cluster/cluster_node.hpp>
#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/core/detail/actor_cell.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/testkit/test_probe.hpp>

#include "cluster/coordination/coordination_keys.hpp"
#include "cluster/membership/members.hpp"
#include "support/etcd_endpoints.hpp"
#include "support/io_thread.hpp"
#include "support/two_nodes.hpp"

#include <boost/describe/class.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace troupe::cluster {
namespace {

using namespace std::chrono_literals;
using sharding::cluster_sharding;
using sharding::sharding_options;
using troupe::testkit::await_condition;

struct note {
  std::string id;
  int n = 0;
  /// How long the entity works on it.
  int work_ms = 0;
  /// An ask: the entity answers with `seen` and records nothing.
  bool ask = false;
};
BOOST_DESCRIBE_STRUCT(note, (), (id, n, work_ms, ask))

/// The answer to an ask: which node's entity handled it.
struct seen {
  std::string node;
  int n = 0;
};
BOOST_DESCRIBE_STRUCT(seen, (), (node, n))

/// A message type no registry knows.
struct secret {
  std::string id;
};
BOOST_DESCRIBE_STRUCT(secret, (), (id))

class keeper final : public troupe::actor<secret> {
  void receive(secret&) override {}
};

/// What every entity of every node saw: (node, epoch, n) per entity id, in arrival order.
struct ledger {
  struct entry {
    std::string node;
    std::uint64_t epoch = 0;
    int n = 0;
  };
  std::mutex mutex;
  std::map<std::string, std::vector<entry>> by_id;
  /// Entities started, per id and node.
  std::map<std::string, std::vector<std::string>> starts;
  /// "start <node> <id>" and "stop <node> <id>", in the order they happened.
  std::vector<std::string> events;

  std::size_t position(const std::string& event) {
    std::lock_guard lock(mutex);
    auto it = std::find(events.begin(), events.end(), event);
    return static_cast<std::size_t>(it - events.begin());
  }

  std::size_t delivered(const std::string& id) {
    std::lock_guard lock(mutex);
    auto it = by_id.find(id);
    return it == by_id.end() ? 0 : it->second.size();
  }

  /// Every one of `ids` got at least `n` messages.
  bool delivered_all(const std::vector<std::string>& ids, std::size_t n) {
    return std::all_of(ids.begin(), ids.end(),
                       [&](const std::string& id) { return delivered(id) >= n; });
  }

  /// Those of `ids` started once, on `node`.
  std::vector<std::string> started_only_on(const std::vector<std::string>& ids,
                                           const std::string& node) {
    std::lock_guard lock(mutex);
    std::vector<std::string> out;
    for (const auto& id : ids) {
      if (starts[id] == std::vector<std::string>{node}) out.push_back(id);
    }
    return out;
  }
};

/// "<prefix>0" ... "<prefix><count - 1>".
std::vector<std::string> numbered(const std::string& prefix, int count) {
  std::vector<std::string> ids;
  for (int i = 0; i < count; ++i) ids.push_back(prefix + std::to_string(i));
  return ids;
}

class recorder final : public troupe::actor<note> {
 public:
  recorder(std::string node, std::shared_ptr<ledger> book)
      : node_(std::move(node)), book_(std::move(book)) {}

 private:
  void pre_start() override {
    const auto* home = troupe::detail::current_cell()->home();
    epoch_ = home != nullptr && home->fence_epoch ? *home->fence_epoch : 0;
    std::lock_guard lock(book_->mutex);
    book_->starts[context().entity()->entity_id].push_back(node_);
    book_->events.push_back("start " + node_ + " " + context().entity()->entity_id);
  }
  void post_stop() override {
    std::lock_guard lock(book_->mutex);
    book_->events.push_back("stop " + node_ + " " + context().entity()->entity_id);
  }
  void receive(note& m) override {
    if (m.ask) {
      context().reply(seen{node_, m.n});
      return;
    }
    if (m.work_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(m.work_ms));
    std::lock_guard lock(book_->mutex);
    book_->by_id[m.id].push_back({node_, epoch_, m.n});
  }
  std::string node_;
  std::shared_ptr<ledger> book_;
  std::uint64_t epoch_ = 0;
};

std::shared_ptr<message_registry> registry() {
  auto r = std::make_shared<message_registry>();
  add_cluster_messages(*r);
  r->add<note>("test.cluster_node.note").add<seen>("test.cluster_node.seen");
  return r;
}

/// One node: its system and remoting, its store client, and its membership.
struct member {
  member(test::network& net, std::shared_ptr<consensus_store> client,
         const std::string& cluster_name, const std::string& name,
         std::shared_ptr<troupe::clock> clock, duration ttl = 2s, duration margin = 500ms,
         std::vector<std::string> roles = {}, remote_options remote = {},
         std::shared_ptr<message_registry> messages = registry())
      : node(net, std::move(messages), std::move(remote), name), store(std::move(client)) {
    auto options = cluster_node_options{}
                       .with_cluster_name(cluster_name)
                       .with_node(name)
                       .with_lease_ttl(ttl)
                       .with_roles(std::move(roles));
    options.lease_margin = margin;
    options.retry = 50ms;  // homeless shards are asked for again soon: moves are quick
    options.on_fenced = [this](const std::string& reason) {
      std::lock_guard lock(fence_mutex);
      fence_reasons.push_back(reason);
    };
    cluster = cluster_node::join(node.system, cluster_sharding::get(node.system), *node.remote,
                                 store, std::move(options), std::move(clock));
  }
  ~member() { cluster.reset(); }

  troupe::actor_ref<note> start(const std::shared_ptr<ledger>& book, const std::string& name) {
    return cluster_sharding::get(node.system)
        .start(sharding_options<note>::create()
                   .with_type_name("recorder")
                   .with_entity<recorder>(name, book)
                   .with_extract_entity_id([](const note& n) { return n.id; })
                   .with_num_shards(8));
  }

  std::vector<std::string> fences() {
    std::lock_guard lock(fence_mutex);
    return fence_reasons;
  }

  test::node node;
  std::shared_ptr<consensus_store> store;
  std::mutex fence_mutex;
  std::vector<std::string> fence_reasons;  // what on_fenced was told
  std::shared_ptr<cluster_node> cluster;
};

/// Both members joined, "recorder" started on each (its entities name their node) and both
/// regions ready: the two regions.
std::pair<troupe::actor_ref<note>, troupe::actor_ref<note>> start_recorders(
    member& a, member& b, const std::shared_ptr<ledger>& book) {
  a.cluster->joined().get();
  b.cluster->joined().get();
  auto to_a = a.start(book, "a");
  auto to_b = b.start(book, "b");
  await_condition([&] { return a.cluster->ready("recorder") && b.cluster->ready("recorder"); }, 5s,
                  "both regions ready");
  // A region is ready once registered; the leading coordinator sees it through its watch a
  // moment later. Until it does, every new shard would go to the one region it knows.
  await_condition(
      [&] {
        return std::max(a.cluster->hosting_regions("recorder"),
                        b.cluster->hosting_regions("recorder")) == 2;
      },
      5s, "the leading coordinator places shards on both regions");
  return {to_a, to_b};
}

/// The node each shard of "recorder" is allocated to, as the store says now.
std::map<troupe::sharding::shard_id, std::string> allocation_owners(consensus_store& store,
                                                                    const std::string& cluster) {
  std::promise<range_result> read;
  store.range(key_range::prefix(alloc_prefix(cluster, "recorder")),
              [&](std::error_code, range_result r) { read.set_value(std::move(r)); });
  std::map<troupe::sharding::shard_id, std::string> owners;
  for (const auto& kv : read.get_future().get().kvs) {
    if (auto al = decode_allocation(cluster, "recorder", kv)) owners[al->shard] = al->owner.node;
  }
  return owners;
}

/// Whether `node` has a member key in the store now.
bool is_member(consensus_store& store, const std::string& cluster, const std::string& node) {
  std::promise<range_result> read;
  store.range(key_range::prefix(members_prefix(cluster)),
              [&](std::error_code, range_result r) { read.set_value(std::move(r)); });
  for (const auto& kv : read.get_future().get().kvs) {
    if (auto m = decode_member(cluster, kv.key, kv.value); m && m->info.id.node == node) {
      return true;
    }
  }
  return false;
}

class cluster_node_test : public ::testing::Test {
 protected:
  test::network net_{test::net_kind::memory};
  // Before the clock: answers the model holds back for an unreachable client sit in the clock's
  // timers with strands of this io_context, and go when the clock does.
  test::io_thread io_;
  std::shared_ptr<troupe::clock> clock_ = make_steady_clock();
  in_process_etcd etcd_{clock_};
  std::shared_ptr<ledger> book_ = std::make_shared<ledger>();
};

enum class store_kind { model, etcd };

/// The same nodes on the in-process model and on a real etcd (skipped without
/// TROUPE_ETCD_ENDPOINTS; a fresh cluster name per run).
class cluster_node_stores : public cluster_node_test,
                            public ::testing::WithParamInterface<store_kind> {
 protected:
  void SetUp() override {
    if (GetParam() == store_kind::etcd) {
      endpoints_ = test::etcd_endpoints();
      if (endpoints_.empty())
        GTEST_SKIP() << "TROUPE_ETCD_ENDPOINTS is not set (scripts/etcd.sh start)";
      cluster_name_ = test::fresh_name("cluster-node-test");
    }
  }
  std::shared_ptr<consensus_store> client() {
    if (GetParam() == store_kind::model) return etcd_.client(io_.executor());
    return make_etcd_store(io_.executor(), {endpoints_});
  }

  std::vector<std::string> endpoints_;
  std::string cluster_name_ = "troupe";
};

TEST_F(cluster_node_test, a_type_starts_only_on_a_node_that_has_joined) {
  test::node n(net_, registry(), {}, "lonely");
  auto store = etcd_.client(io_.executor());
  etcd_.set_reachable(*store, false);  // the grant cannot be answered
  auto node = cluster_node::join(n.system, cluster_sharding::get(n.system), *n.remote, store,
                                 cluster_node_options{}.with_node("lonely"), clock_);
  EXPECT_EQ(node->self().incarnation, 0);
  try {
    (void)cluster_sharding::get(n.system).start(
        sharding_options<note>::create()
            .with_type_name("recorder")
            .with_entity<recorder>(std::string("lonely"), book_)
            .with_extract_entity_id([](const note& m) { return m.id; }));
    ADD_FAILURE() << "started before joining";
  } catch (const troupe::error& e) {
    EXPECT_EQ(e.code(), make_error_code(troupe::errc::invalid_config));
    EXPECT_NE(std::string(e.what()).find("joined"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cluster_node::join(n.system, cluster_sharding::get(n.system), *n.remote, store,
                                  cluster_node_options{}.with_node("a#b"), clock_),
               std::invalid_argument);
}

TEST_F(cluster_node_test, a_type_whose_messages_cannot_cross_nodes_does_not_start) {
  member a(net_, etcd_.client(io_.executor()), "troupe", "a", clock_);
  a.cluster->joined().get();
  try {
    (void)cluster_sharding::get(a.node.system)
        .start(sharding_options<secret>::create()
                   .with_type_name("keeper")
                   .with_entity<keeper>()
                   .with_extract_entity_id([](const secret& m) { return m.id; }));
    ADD_FAILURE() << "started a type whose messages no registry knows";
  } catch (const troupe::error& e) {
    EXPECT_EQ(e.code(), make_error_code(troupe::errc::invalid_config));
    EXPECT_NE(std::string(e.what()).find("registry"), std::string::npos) << e.what();
  }
}

TEST_P(cluster_node_stores,
       messages_reach_the_node_that_hosts_their_shard_and_follow_it_when_its_node_leaves) {
  member a(net_, client(), cluster_name_, "a", clock_);
  member b(net_, client(), cluster_name_, "b", clock_);
  auto [to_a, to_b] = start_recorders(a, b, book_);
  await_condition([&] { return a.cluster->leads("recorder") != b.cluster->leads("recorder"); }, 5s,
                  "exactly one coordinator leads");

  // Only a's region gets messages: those of b's shards go on to b.
  const auto ids = numbered("user-", 24);
  for (int n = 0; n < 3; ++n) {
    for (const auto& id : ids) to_a.tell(note{id, n});
  }
  await_condition([&] { return book_->delivered_all(ids, 3); }, 10s,
                  "every message delivered on its shard's node");
  // Which node each id's shard was allocated to.
  std::map<std::string, std::string> owner_of;
  auto owners = allocation_owners(*a.store, cluster_name_);
  for (const auto& id : ids) owner_of[id] = owners[troupe::sharding::shard_of(id, 8)];
  std::vector<std::string> moved;
  {
    std::lock_guard lock(book_->mutex);
    for (const auto& id : ids) {
      if (owner_of[id] == "b") moved.push_back(id);
      const auto& got = book_->by_id[id];
      ASSERT_EQ(got.size(), 3u) << id;
      for (int n = 0; n < 3; ++n) {
        EXPECT_EQ(got[n].n, n) << id;                // in the order sent
        EXPECT_EQ(got[n].node, owner_of[id]) << id;  // only where the shard is allocated
        EXPECT_GT(got[n].epoch, 0u) << id;           // at an allocation's epoch
      }
      EXPECT_EQ(book_->starts[id], std::vector<std::string>{owner_of[id]}) << id;
    }
  }
  ASSERT_FALSE(moved.empty());
  ASSERT_LT(moved.size(), ids.size());
  // An ask through a's region is answered across nodes by the entity on b.
  for (const auto& id : moved) {
    auto answer = to_a.ask<seen>(note{id, 7, 0, true}, 5s, troupe::use_future);
    const seen got = answer.get();
    EXPECT_EQ(got.node, "b") << id;
    EXPECT_EQ(got.n, 7) << id;
  }

  // b leaves: its shards stop, its keys go, and its shards move to a. Messages sent through the
  // region of b, which hosts nothing any more, reach them on a.
  std::promise<std::error_code> left;
  b.cluster->leave([&](std::error_code ec) { left.set_value(ec); });
  EXPECT_FALSE(left.get_future().get());
  for (int n = 3; n < 5; ++n) {
    for (const auto& id : ids) to_b.tell(note{id, n});
  }
  await_condition([&] { return book_->delivered_all(ids, 5); }, 15s,
                  "every message delivered after b left");

  std::lock_guard lock(book_->mutex);
  for (const auto& id : ids) {
    if (owner_of[id] != "a") continue;
    const auto& got = book_->by_id[id];
    ASSERT_EQ(got.size(), 5u) << id;
    for (int n = 0; n < 5; ++n) {
      EXPECT_EQ(got[n].n, n) << id;
      EXPECT_EQ(got[n].node, "a") << id;
    }
    EXPECT_EQ(book_->starts[id], std::vector<std::string>{"a"}) << id;
  }
  for (const auto& id : moved) {
    const auto& got = book_->by_id[id];
    ASSERT_EQ(got.size(), 5u) << id;
    for (int n = 3; n < 5; ++n) {
      EXPECT_EQ(got[n].n, n) << id;
      EXPECT_EQ(got[n].node, "a") << id;
      EXPECT_GT(got[n].epoch, got[0].epoch) << id;  // allocated again, later
    }
    EXPECT_EQ(book_->starts[id], (std::vector<std::string>{"b", "a"})) << id;
    EXPECT_LT(std::find(book_->events.begin(), book_->events.end(), "stop b " + id),
              std::find(book_->events.begin(), book_->events.end(), "start a " + id))
        << id << ": started on a before it stopped on b";
  }
}

TEST_F(cluster_node_test, only_nodes_with_the_role_host_a_type_and_the_others_route_to_them) {
  member a(net_, etcd_.client(io_.executor()), "troupe", "a", clock_, 2s, 500ms, {"backend"});
  member b(net_, etcd_.client(io_.executor()), "troupe", "b", clock_, 2s, 500ms, {"web"});
  member c(net_, etcd_.client(io_.executor()), "troupe", "c", clock_);
  for (member* m : {&a, &b, &c}) m->cluster->joined().get();
  auto start = [&](member& m, const std::string& name, bool proxy) {
    auto options = sharding_options<note>::create()
                       .with_type_name("recorder")
                       .with_role("backend")
                       .with_extract_entity_id([](const note& n) { return n.id; })
                       .with_num_shards(8);
    if (proxy) {
      options.with_proxy();
    } else {
      options.with_entity<recorder>(name, book_);
    }
    return cluster_sharding::get(m.node.system).start(std::move(options));
  };
  auto to_a = start(a, "a", false);
  auto to_b = start(b, "b", false);  // entities it could host, but not the role
  auto to_c = start(c, "c", true);   // a proxy: no entities at all
  await_condition(
      [&] {
        return a.cluster->ready("recorder") && b.cluster->ready("recorder") &&
               c.cluster->ready("recorder");
      },
      5s, "three regions ready");
  EXPECT_FALSE(b.cluster->leads("recorder")) << "a coordinator runs only where the type is hosted";
  EXPECT_FALSE(c.cluster->leads("recorder"));
  const auto ids = numbered("room-", 16);
  for (const auto& id : ids) {
    to_b.tell(note{id, 1});
    to_c.tell(note{id, 2});
  }
  await_condition([&] { return book_->delivered_all(ids, 2); }, 10s,
                  "every message through the role-less and the proxy region delivered");
  EXPECT_EQ(book_->started_only_on(ids, "a"), ids) << "only the node with the role hosts";
  auto answer = to_c.ask<seen>(note{ids[0], 3, 0, true}, 5s, troupe::use_future);
  EXPECT_EQ(answer.get().node, "a") << "an ask through the proxy is answered by the host";
  EXPECT_TRUE(a.cluster->leads("recorder"));
  (void)to_a;
}

TEST_F(cluster_node_test,
       a_message_the_owner_cannot_read_is_a_dead_letter_there_and_its_ask_fails_at_once) {
  auto newer = std::make_shared<message_registry>();
  add_cluster_messages(*newer);
  newer->add<note>("test.cluster_node.note", 2).add<seen>("test.cluster_node.seen");
  member a(net_, etcd_.client(io_.executor()), "troupe", "a", clock_);
  member b(net_, etcd_.client(io_.executor()), "troupe", "b", clock_, 2s, 500ms, {"backend"}, {},
           newer);
  for (member* m : {&a, &b}) m->cluster->joined().get();
  auto start = [&](member& m, const std::string& name) {
    return cluster_sharding::get(m.node.system)
        .start(sharding_options<note>::create()
                   .with_type_name("recorder")
                   .with_role("backend")
                   .with_entity<recorder>(name, book_)
                   .with_extract_entity_id([](const note& n) { return n.id; })
                   .with_num_shards(8));
  };
  auto to_a = start(a, "a");  // routes to b, which alone has the role
  auto to_b = start(b, "b");
  await_condition([&] { return a.cluster->ready("recorder") && b.cluster->ready("recorder"); }, 5s,
                  "both regions ready");
  troupe::testkit::test_probe<troupe::dead_letter> letters(b.node.system, "letters");
  b.node.system.dead_letters().subscribe(letters.ref());

  auto answer = to_a.ask<seen>(note{"room-1", 1, 0, true}, 60s, troupe::use_future);
  const auto letter = letters.expect_message(5s);
  EXPECT_NE(letter.reason.find("sharded type 'recorder': no message type registered as "
                               "'test.cluster_node.note' v1"),
            std::string::npos)
      << letter.reason;
  ASSERT_EQ(answer.wait_for(5s), std::future_status::ready) << "should not wait 60 s";
  EXPECT_THROW(answer.get(), std::exception);
  // b's own messages, in the version it knows, still reach its entities.
  to_b.tell(note{"room-1", 2});
  await_condition([&] { return book_->delivered_all({"room-1"}, 1); }, 5s,
                  "b's own message delivered");
}

TEST_F(cluster_node_test,
       a_watch_across_nodes_ends_when_the_member_key_goes_not_when_heartbeats_stop) {
  // Heartbeats that notice the partition long before b's lease (2 s) can run out.
  const auto quick =
      remote_options{}.with_heartbeat(50ms, 400ms).with_reconnect_backoff(20ms, 200ms);
  member a(net_, etcd_.client(io_.executor()), "troupe", "a", clock_, 2s, 500ms, {}, quick);
  member b(net_, etcd_.client(io_.executor()), "troupe", "b", clock_, 2s, 500ms, {}, quick);
  a.cluster->joined().get();
  b.cluster->joined().get();
  troupe::testkit::test_probe<note> there(b.node.system, "there");
  b.node.remote->expose(there.ref());
  auto far = a.node.remote->ref_to<note>(b.node.address(), there.ref().path());
  troupe::testkit::test_probe<note> watcher(a.node.system, "watcher");
  far.tell(note{"x", 1});
  EXPECT_EQ(there.expect_message().n, 1);
  watcher.watch(far);

  net_.memory().partition(a.node.address(), b.node.address());
  etcd_.set_reachable(*b.store, false);  // b's lease runs out
  await_condition([&] { return a.node.remote->stats().peers_unreachable >= 1; }, 5s,
                  "a's heartbeats notice the partition");
  // Checked in this order, a terminated seen while the key is still there is a real violation.
  bool ended = false;
  const auto deadline = std::chrono::steady_clock::now() + troupe::testkit::dilated(15s);
  while (!ended && std::chrono::steady_clock::now() < deadline) {
    try {
      watcher.expect_terminated(far, 20ms);
      ended = true;
    } catch (const troupe::testkit::expectation_failed&) {
    }
    if (is_member(*a.store, "troupe", "b")) {
      ASSERT_FALSE(ended) << "the watch ended while b was still a member";
    } else if (!ended) {
      watcher.expect_terminated(far, 5s);  // the key is gone: the watch ends now
      ended = true;
    }
  }
  EXPECT_TRUE(ended) << "the watch never ended";
  EXPECT_EQ(a.node.remote->stats().peers_lost, 1U) << "lost once: when b left, not before";
}

TEST_F(cluster_node_test, the_cluster_state_names_every_owner_and_epoch_the_regions_route_by) {
  const auto quick =
      remote_options{}.with_heartbeat(50ms, 400ms).with_reconnect_backoff(20ms, 200ms);
  member a(net_, etcd_.client(io_.executor()), "troupe", "a", clock_, 2s, 500ms, {"web"}, quick);
  member b(net_, etcd_.client(io_.executor()), "troupe", "b", clock_, 2s, 500ms, {}, quick);
  auto [to_a, to_b] = start_recorders(a, b, book_);
  const auto ids = numbered("user-", 24);
  for (const auto& id : ids) to_a.tell(note{id, 0});
  await_condition([&] { return book_->delivered_all(ids, 1); }, 10s, "every message delivered");

  const cluster_state s = a.cluster->read_state().get();
  EXPECT_EQ(s.cluster, "troupe");
  ASSERT_EQ(s.members.size(), 2u);
  EXPECT_EQ(s.members[0].info.id, a.cluster->self());
  EXPECT_EQ(s.members[0].info.roles, std::vector<std::string>{"web"});
  EXPECT_EQ(s.members[0].address, to_string(a.node.address()));
  EXPECT_EQ(s.members[0].reach, reachability::self);
  EXPECT_EQ(s.members[1].info.id, b.cluster->self());
  EXPECT_EQ(s.members[1].reach, reachability::connected) << "a sent b its shards' messages";
  ASSERT_EQ(s.types.size(), 1u);
  const type_state& t = s.types[0];
  EXPECT_EQ(t.type, "recorder");
  EXPECT_EQ(t.coordinator, a.cluster->leads("recorder") ? "a" : "b");
  ASSERT_EQ(t.regions.size(), 2u);
  EXPECT_EQ(t.regions[0].shards + t.regions[1].shards, t.shards.size());
  EXPECT_EQ(allocation_owners(*a.store, "troupe").size(), t.shards.size());
  std::map<troupe::sharding::shard_id, shard_placement> placed;
  for (const auto& p : t.shards) {
    EXPECT_TRUE(p.owner_is_member) << p.shard;
    EXPECT_GT(p.epoch, 0) << p.shard;
    placed[p.shard] = p;
  }

  // Each shard a's region routes to names the owner and epoch of the allocation it routes by.
  std::set<bool> kinds;
  for (const auto& info : cluster_sharding::get(a.node.system).shards("recorder")) {
    ASSERT_TRUE(placed.contains(info.id)) << info.id;
    const auto& p = placed[info.id];
    EXPECT_EQ(info.owner, p.owner.node) << info.id;
    EXPECT_EQ(info.epoch, p.epoch) << info.id;
    EXPECT_EQ(info.local, p.owner.node == "a") << info.id;
    kinds.insert(info.local);
  }
  EXPECT_EQ(kinds.size(), 2u) << "shards on both nodes";

  // Cut off from a, b stays a member (its lease lives): a shows it unreachable, not gone.
  net_.memory().partition(a.node.address(), b.node.address());
  await_condition(
      [&] {
        const auto now = a.cluster->read_state().get();
        return now.members.size() == 2 && now.members[1].reach == reachability::unreachable;
      },
      5s, "b shown unreachable while still a member");
  net_.memory().heal(a.node.address(), b.node.address());
  for (const auto& id : ids) to_a.tell(note{id, 1});  // b's shards' messages reconnect to b
  await_condition(
      [&] { return a.cluster->read_state().get().members[1].reach == reachability::connected; }, 5s,
      "b connected again after the partition healed");
  (void)to_b;
}

TEST_F(cluster_node_test, a_leaving_node_stops_its_entities_before_its_shards_move) {
  // A long lease: leave() waits for the shards at most one TTL, and their work here takes ~2 s,
  // longer than the coordinator's tick, so a leave that did not wait would be seen.
  member a(net_, etcd_.client(io_.executor()), "troupe", "a", clock_, 8s);
  member b(net_, etcd_.client(io_.executor()), "troupe", "b", clock_, 8s);
  auto [to_a, to_b] = start_recorders(a, b, book_);
  // Every id gets one message through each node's region: both reach the one node that hosts it.
  const auto ids = numbered("device-", 16);
  for (const auto& id : ids) {
    to_a.tell(note{id, 0});
    to_b.tell(note{id, 0});
  }
  await_condition([&] { return book_->delivered_all(ids, 2); }, 10s,
                  "every id's messages delivered");
  std::vector<std::string> on_a;
  {
    std::lock_guard lock(book_->mutex);
    for (const auto& id : ids) {
      ASSERT_EQ(book_->starts[id].size(), 1u) << id;  // one activation, on one node
      if (book_->starts[id].front() == "a") on_a.push_back(id);
    }
  }
  ASSERT_FALSE(on_a.empty());
  ASSERT_LT(on_a.size(), ids.size());
  // a's entities have work queued when a leaves: they stop only after it.
  for (int n = 1; n <= 4; ++n) {
    for (const auto& id : on_a) to_a.tell(note{id, n, 120});
  }

  std::promise<std::error_code> left;
  a.cluster->leave([&](std::error_code ec) { left.set_value(ec); });
  EXPECT_FALSE(left.get_future().get());
  // Sent through the region of a, which left: it routes them to b, which hosts a's shards now,
  // each started after a's copy stopped.
  for (const auto& id : on_a) to_a.tell(note{id, 5});
  await_condition(
      [&] {
        std::lock_guard lock(book_->mutex);
        for (const auto& id : on_a) {
          if (book_->by_id[id].size() < 7) return false;
        }
        return true;
      },
      10s, "a's entities started again on b");
  for (const auto& id : on_a) {
    const auto stopped = book_->position("stop a " + id);
    const auto started = book_->position("start b " + id);
    EXPECT_LT(stopped, started) << id << ": started on b before it stopped on a";
    std::lock_guard lock(book_->mutex);
    const auto& got = book_->by_id[id];
    ASSERT_EQ(got.size(), 7u) << id;
    for (std::size_t i = 0; i < 6; ++i) {
      EXPECT_EQ(got[i].node, "a") << id;  // the queued work finished on a, in order
      EXPECT_EQ(got[i].n, i < 2 ? 0 : static_cast<int>(i) - 1) << id;
    }
    EXPECT_EQ(got[6].node, "b") << id;  // then what was sent after a left
    EXPECT_EQ(got[6].n, 5) << id;
    EXPECT_GT(got[6].epoch, got[0].epoch) << id;
  }
}

TEST_F(cluster_node_test, a_node_that_fenced_itself_stops_its_entities_at_once_before_they_move) {
  // b fences itself between 0.5 s and 1.5 s after it loses the store, and its lease runs out
  // 1.5 s later: its entities must be gone by then, without working through their mailboxes
  // (each has 2 s of work queued).
  member a(net_, etcd_.client(io_.executor()), "troupe", "a", clock_, 3s, 1500ms);
  member b(net_, etcd_.client(io_.executor()), "troupe", "b", clock_, 3s, 1500ms);
  auto [to_a, to_b] = start_recorders(a, b, book_);
  const auto ids = numbered("meter-", 16);
  for (const auto& id : ids) to_a.tell(note{id, 0});
  await_condition([&] { return book_->delivered_all(ids, 1); }, 10s,
                  "every id active on its shard's node");
  const auto on_b = book_->started_only_on(ids, "b");
  ASSERT_FALSE(on_b.empty());
  ASSERT_LT(on_b.size(), ids.size());
  constexpr int queued = 40;
  for (int n = 1; n <= queued; ++n) {
    for (const auto& id : on_b) to_b.tell(note{id, n, 50});
  }

  etcd_.set_reachable(*b.store, false);
  await_condition([&] { return b.cluster->fenced(); }, 5s, "b fenced itself");
  await_condition([&] { return !b.fences().empty(); }, 5s, "b's on_fenced called");
  EXPECT_EQ(b.fences().size(), 1u);
  EXPECT_TRUE(a.fences().empty());
  // Once b's lease ran out, its shards are allocated to a; a message sent to a's region then
  // gets there. (One sent while a still routes to b would wait on b, which cannot read.)
  await_condition(
      [&] {
        auto owners = allocation_owners(*a.store, "troupe");
        for (const auto& id : on_b) {
          if (owners[troupe::sharding::shard_of(id, 8)] != "a") return false;
        }
        return true;
      },
      10s, "b's shards allocated to a");
  // a's region may still route to b until it has read the new allocation (its senders send to
  // a remote home themselves), and b, fenced, drops what it gets: a tell is at most once, so
  // the test tells again, every 200 ms, until each entity has the note.
  auto last_told = std::chrono::steady_clock::time_point{};
  await_condition(
      [&] {
        std::vector<std::string> missing;
        {
          std::lock_guard lock(book_->mutex);
          for (const auto& id : on_b) {
            const auto& got = book_->by_id[id];
            if (got.empty() || got.back().n != 1000) missing.push_back(id);
          }
        }
        const auto now = std::chrono::steady_clock::now();
        if (!missing.empty() && now - last_told >= 200ms) {
          for (const auto& id : missing) to_a.tell(note{id, 1000});
          last_told = now;
        }
        return missing.empty();
      },
      15s, "b's entities started again on a");
  std::lock_guard lock(book_->mutex);
  for (const auto& id : on_b) {
    std::size_t on_node_b = 0;
    for (const auto& e : book_->by_id[id]) on_node_b += e.node == "b" ? 1 : 0;
    EXPECT_LT(on_node_b, static_cast<std::size_t>(queued) + 1)
        << id << ": b worked through its mailbox after it fenced itself";
    EXPECT_EQ(book_->starts[id], (std::vector<std::string>{"b", "a"})) << id;
    EXPECT_LT(std::find(book_->events.begin(), book_->events.end(), "stop b " + id),
              std::find(book_->events.begin(), book_->events.end(), "start a " + id))
        << id << ": started on a before it stopped on b";
  }
}

INSTANTIATE_TEST_SUITE_P(on, cluster_node_stores,
                         ::testing::Values(store_kind::model, store_kind::etcd),
                         [](const ::testing::TestParamInfo<store_kind>& p) {
                           return p.param == store_kind::model ? std::string("model")
                                                               : std::string("etcd");
                         });

}  // namespace
}  // namespace troupe::cluster
