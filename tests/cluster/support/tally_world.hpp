#pragma once
// A cluster for tests that check what survives faults and moves: "tally", a persistent entity
// that journals what each sender added; nodes on the memory network and the in-process model of
// etcd with one shared journal; a load of numbered adds from several senders; and the checkers
// (no stale activation, a sound journal, nothing acknowledged lost, each sender's order kept).

#include <troupe/cluster/cluster_messages.hpp>
#include <troupe/cluster/cluster_node.hpp>
#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/persistence/memory_plugin.hpp>
#include <troupe/persistence/persistence_extension.hpp>
#include <troupe/persistence/persistent_entity.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/testkit/test_probe.hpp>

#include "cluster/coordination/coordination_keys.hpp"
#include "io_thread.hpp"
#include "two_nodes.hpp"

#include <boost/asio/use_future.hpp>
#include <boost/describe/class.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

namespace troupe::cluster::tally_test {

using namespace std::chrono_literals;
namespace tp = troupe::persistence;
using sharding::cluster_sharding;
using sharding::sharding_options;

// -- the entity: it journals what each sender added, and can list it ---------------------------

struct add {
  std::string id;
  int sender = 0;
  int n = 0;
  /// How long the entity works on it before it persists (a backlog that takes time to drain).
  int work_ms = 0;
};
BOOST_DESCRIBE_STRUCT(add, (), (id, sender, n, work_ms))
struct list {
  std::string id;
};
BOOST_DESCRIBE_STRUCT(list, (), (id))
using tally_command = std::variant<add, list>;

struct added {
  int sender = 0;
  int n = 0;
};
BOOST_DESCRIBE_STRUCT(added, (), (sender, n))
/// Every event applied, in journal order (as two columns).
struct tallied {
  std::vector<int> senders;
  std::vector<int> ns;
};
BOOST_DESCRIBE_STRUCT(tallied, (), (senders, ns))
/// The answer to both commands: the state, and which activation answered.
struct tally_reply {
  std::string label;
  tallied state;
};
BOOST_DESCRIBE_STRUCT(tally_reply, (), (label, state))

/// start, handle and stop of every activation and the fence of every node, in the order they
/// happened (the mutex orders them).
struct activity {
  struct entry {
    // pause, resume: the node's process stopped and went on (a paused process acts on nothing)
    enum kind { start, handle, stop, fence, pause, resume } what;
    std::string label;  // "<node>#<incarnation number>"
    std::string id;
    std::string detail;  // what was handled: "add <sender>:<n>" or "list"
  };
  void record(entry::kind what, const std::string& label, const std::string& id = {},
              std::string detail = {}) {
    std::lock_guard lock(mutex);
    entries.push_back({what, label, id, std::move(detail)});
  }
  /// The last `count` entries about `id` (and every fence), one line each: a failure's context.
  std::string history(const std::string& id, std::size_t count = 80) {
    static constexpr const char* kinds[] = {"start", "handle", "stop", "fence", "pause", "resume"};
    std::lock_guard lock(mutex);
    std::vector<std::string> lines;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const auto& e = entries[i];
      if (e.id != id && e.what != entry::fence && e.what != entry::pause &&
          e.what != entry::resume) {
        continue;
      }
      lines.push_back("    " + std::to_string(i) + " " + kinds[e.what] + " " + e.label + " " +
                      e.detail + "\n");
    }
    std::string out;
    for (auto i = lines.size() > count ? lines.size() - count : 0; i < lines.size(); ++i)
      out += lines[i];
    return out;
  }
  std::mutex mutex;
  std::vector<entry> entries;
};

class tally final : public tp::persistent_entity<tally_command, added, tallied> {
 public:
  /// With `planted_loss`, a bug planted on purpose to show the checkers find it: the 30th add
  /// an activation handles is acknowledged without being persisted.
  tally(std::string label, std::shared_ptr<activity> log, bool planted_loss = false)
      : label_(std::move(label)), log_(std::move(log)), planted_loss_(planted_loss) {}

 private:
  void on_start() override {
    log_->record(activity::entry::start, label_, context().entity()->entity_id);
  }
  void post_stop() override {
    log_->record(activity::entry::stop, label_, context().entity()->entity_id);
  }
  effect_type on_command(const tallied& state, tally_command& cmd) override {
    const auto* a = std::get_if<add>(&cmd);
    log_->record(activity::entry::handle, label_, context().entity()->entity_id,
                 a ? "add " + std::to_string(a->sender) + ":" + std::to_string(a->n) : "list");
    auto answer = [label = label_](const tallied& now) { return tally_reply{label, now}; };
    if (a != nullptr) {
      if (a->work_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(a->work_ms));
      if (planted_loss_ && ++adds_ == 30) return reply(answer(state));
      return persist(added{a->sender, a->n}).then_reply(answer);
    }
    return reply(answer(state));
  }
  tallied apply(tallied s, const added& e) const override {
    s.senders.push_back(e.sender);
    s.ns.push_back(e.n);
    return s;
  }
  std::string label_;
  std::shared_ptr<activity> log_;
  bool planted_loss_;
  int adds_ = 0;
};

inline std::shared_ptr<message_registry> registry() {
  auto r = std::make_shared<message_registry>();
  add_cluster_messages(*r);
  r->add<tally_command>("test.faults.tally_command").add<tally_reply>("test.faults.tally_reply");
  return r;
}

// -- the cluster -----------------------------------------------------------------------------

/// The parts every node shares.
struct world {
  explicit world(std::uint64_t seed) : net(test::net_kind::memory, seed) {}
  test::network net;
  test::io_thread io;  // before the clock: the model's held answers hold the io's strands
  std::shared_ptr<troupe::clock> clock = make_steady_clock();
  in_process_etcd etcd{clock};
  std::shared_ptr<tp::memory_storage> journal = tp::make_memory_storage();
  std::shared_ptr<activity> log = std::make_shared<activity>();
};

/// One incarnation of a node: it joins, starts "tally" (as a proxy on the gate) and reports its
/// fence to the log. Its cluster runs on `clock`, or on the world's.
struct member {
  member(world& w, const std::string& name, int incarnation, bool proxy,
         std::shared_ptr<troupe::clock> clock = nullptr,
         const std::function<void(cluster_node_options&)>& tune = {},
         const std::function<void(sharding_options<tally_command>&)>& tune_type = {})
      : label(name + "#" + std::to_string(incarnation)),
        node(w.net, registry(),
             remote_options{}.with_heartbeat(100ms, 600ms).with_reconnect_backoff(20ms, 200ms),
             name),
        store(w.etcd.client(w.io.executor())) {
    auto& persistence = tp::get(node.system);
    persistence.codecs().add<added>("test.faults.added").add<tallied>("test.faults.tallied");
    persistence.set_default_plugin(tp::make_memory_plugin(w.journal));
    auto options =
        cluster_node_options{}.with_cluster_name("faults").with_node(name).with_lease_ttl(2s);
    options.lease_margin = 500ms;
    options.retry = 50ms;
    options.on_fenced = [log = w.log, l = label](const std::string&) {
      log->record(activity::entry::fence, l);
    };
    if (tune) tune(options);
    cluster = cluster_node::join(node.system, cluster_sharding::get(node.system), *node.remote,
                                 store, std::move(options), clock ? std::move(clock) : w.clock);
    cluster->joined().get();
    auto type = sharding_options<tally_command>::create()
                    .with_type_name("tally")
                    .with_extract_entity_id([](const tally_command& c) {
                      return std::visit([](const auto& m) { return m.id; }, c);
                    })
                    .with_num_shards(64);
    if (proxy) {
      type.with_proxy();
    } else {
      type.with_entity<tally>(label, w.log);
    }
    if (tune_type) tune_type(type);
    region = cluster_sharding::get(node.system).start(std::move(type));
  }
  ~member() { cluster.reset(); }

  std::string label;
  int sender = 0;  // the sender that sends through this incarnation's region
  test::node node;
  std::shared_ptr<consensus_store> store;
  std::shared_ptr<cluster_node> cluster;
  troupe::actor_ref<tally_command> region;
};

// -- the checkers ----------------------------------------------------------------------------

/// No stale activation, from the log: what it finds, one line each.
inline std::vector<std::string> stale_activations(activity& log) {
  std::lock_guard lock(log.mutex);
  std::vector<std::string> found;
  std::map<std::string, std::string> newest;             // id -> label of its latest start
  std::map<std::string, std::set<std::string>> running;  // id -> labels running it
  std::set<std::string> fenced;                          // labels fenced
  // Labels paused now: a paused node acts on nothing, so a start elsewhere meanwhile is no
  // conflict (its lease may have run out); anything it handles once it runs again is, by the
  // handle rule, and so is a later start while it still runs the entity unfenced.
  std::set<std::string> paused;
  for (std::size_t i = 0; i < log.entries.size(); ++i) {
    const auto& e = log.entries[i];
    switch (e.what) {
      case activity::entry::start:
        for (const auto& other : running[e.id]) {
          if (other != e.label && !fenced.contains(other) && !paused.contains(other)) {
            found.push_back(e.id + " started on " + e.label + " while it ran on " + other +
                            ", not fenced (event " + std::to_string(i) + ")");
          }
        }
        running[e.id].insert(e.label);
        newest[e.id] = e.label;
        break;
      case activity::entry::handle:
        if (newest[e.id] != e.label) {
          found.push_back(e.id + " handled a message on " + e.label + " after it started on " +
                          newest[e.id] + " (event " + std::to_string(i) + ")");
        }
        break;
      case activity::entry::stop:
        running[e.id].erase(e.label);
        break;
      case activity::entry::fence:
        fenced.insert(e.label);
        break;
      case activity::entry::pause:
        paused.insert(e.label);
        break;
      case activity::entry::resume:
        paused.erase(e.label);
        break;
    }
  }
  return found;
}

/// The journal of each id: contiguous sequence numbers from 1, epochs never going down.
inline std::vector<std::string> journal_faults(const std::shared_ptr<tp::memory_storage>& storage,
                                               const std::vector<std::string>& ids) {
  auto plugin = tp::make_memory_plugin(storage);
  std::vector<std::string> found;
  for (const auto& id : ids) {
    auto records = plugin->journal()
                       .async_read(tp::read_request{"tally-" + id}, boost::asio::use_future)
                       .get();
    for (std::size_t i = 0; i < records.size(); ++i) {
      if (records[i].sequence != i + 1) {
        found.push_back(id + ": event " + std::to_string(i) + " has sequence number " +
                        std::to_string(records[i].sequence));
        break;  // the rest follow from it
      }
      if (i > 0 && records[i].epoch < records[i - 1].epoch) {
        found.push_back(id + ": epoch " + std::to_string(records[i].epoch) + " after " +
                        std::to_string(records[i - 1].epoch) + " at sequence " +
                        std::to_string(records[i].sequence));
      }
    }
  }
  return found;
}

/// A sender and the region it sends through. Each sender keeps its own numbering.
struct route {
  int sender = 0;
  troupe::actor_ref<tally_command> region;
};

/// Sends numbered adds from several senders, without waiting for the answers, and remembers
/// which were acknowledged.
class load {
 public:
  explicit load(std::uint64_t seed) : random_(seed) {}

  /// Sends `count` adds, each from a random one of `routes` to one of `ids`, each taking its
  /// entity `work_ms`.
  void send(int count, const std::vector<route>& routes, const std::vector<std::string>& ids,
            int work_ms = 0) {
    for (int i = 0; i < count; ++i) {
      const auto& r = routes[random_() % routes.size()];
      // Half go to four hot ids: several of one sender's adds to one entity are then in
      // flight together, which is what order across a move needs.
      const auto& id = ids[random_() % 2 == 0 ? random_() % 4 : random_() % ids.size()];
      const int n = ++next_[{r.sender, id}];
      sent_[id].insert({r.sender, n});
      pending_.push_back({id, r.sender, n,
                          r.region.ask<tally_reply>(tally_command{add{id, r.sender, n, work_ms}},
                                                    2s, troupe::use_future)});
    }
  }

  /// Waits for every answer (each ask ends by its timeout at the latest).
  void settle() {
    for (auto& p : pending_) {
      try {
        p.answer.get();
        acknowledged_[p.id].insert({p.sender, p.n});
      } catch (const std::exception&) {
        // not acknowledged: it may or may not have been applied
      }
    }
    pending_.clear();
  }

  [[nodiscard]] const std::map<std::string, std::set<std::pair<int, int>>>& acknowledged() const {
    return acknowledged_;
  }
  /// Every add sent, acknowledged or not.
  [[nodiscard]] const std::map<std::string, std::set<std::pair<int, int>>>& sent() const {
    return sent_;
  }
  [[nodiscard]] std::size_t acknowledged_count() const {
    std::size_t total = 0;
    for (const auto& [id, acks] : acknowledged_) total += acks.size();
    return total;
  }

 private:
  struct in_flight {
    std::string id;
    int sender;
    int n;
    std::future<tally_reply> answer;
  };
  std::mt19937_64 random_;
  std::map<std::pair<int, std::string>, int> next_;
  std::vector<in_flight> pending_;
  std::map<std::string, std::set<std::pair<int, int>>> acknowledged_;
  std::map<std::string, std::set<std::pair<int, int>>> sent_;
};

/// Every acknowledged add is in its entity's state (with `every_sent`, every add sent: where no
/// node crashed or was cut off, nothing may be lost), and each sender's adds are in the order it
/// sent them. Asks each entity (again and again until it answers, within `patience`).
inline std::vector<std::string> lost_or_reordered(const troupe::actor_ref<tally_command>& gate,
                                                  const std::vector<std::string>& ids,
                                                  const load& l, duration patience,
                                                  bool every_sent = false) {
  std::vector<std::string> found;
  const auto give_up = std::chrono::steady_clock::now() + patience;
  for (const auto& id : ids) {
    std::optional<tally_reply> r;
    while (!r && std::chrono::steady_clock::now() < give_up) {
      try {
        r = gate.ask<tally_reply>(tally_command{list{id}}, 1s, troupe::use_future).get();
      } catch (const std::exception&) {
        // not answered yet: the shard is moving
      }
    }
    if (!r) {
      found.push_back(id + " never answered after the faults healed");
      continue;
    }
    std::set<std::pair<int, int>> applied;
    std::map<int, int> last;
    for (std::size_t i = 0; i < r->state.ns.size(); ++i) {
      const int sender = r->state.senders[i];
      const int n = r->state.ns[i];
      applied.insert({sender, n});
      if (n <= last[sender]) {
        found.push_back(id + ": sender " + std::to_string(sender) + "'s add " + std::to_string(n) +
                        " applied after its add " + std::to_string(last[sender]));
      }
      last[sender] = std::max(last[sender], n);
    }
    const auto& expected = every_sent ? l.sent() : l.acknowledged();
    auto acks = expected.find(id);
    if (acks == expected.end()) continue;
    for (const auto& [sender, n] : acks->second) {
      if (!applied.contains({sender, n})) {
        found.push_back(id + ": sender " + std::to_string(sender) + "'s add " + std::to_string(n) +
                        (every_sent ? " was sent" : " was acknowledged") +
                        " and is gone (answered by " + r->label + ")");
      }
    }
  }
  return found;
}

// -- the faults ------------------------------------------------------------------------------

/// How many shards of "tally" each node holds, as the store says now.
inline std::map<std::string, int> shards_per_node(consensus_store& store) {
  std::promise<range_result> read;
  store.range(key_range::prefix(alloc_prefix("faults", "tally")),
              [&](std::error_code, range_result r) { read.set_value(std::move(r)); });
  std::map<std::string, int> count;
  for (const auto& kv : read.get_future().get().kvs) {
    if (auto a = decode_allocation("faults", "tally", kv)) ++count[a->owner.node];
  }
  return count;
}

/// The ids "tally" remembers, over all its shards, as the shared store says now.
inline std::set<std::string> remembered_ids(const std::shared_ptr<tp::memory_storage>& storage) {
  auto plugin = tp::make_memory_plugin(storage);
  auto& store = plugin->remember_entities();
  std::set<std::string> ids;
  for (auto shard : store.async_list_shards("tally", boost::asio::use_future).get()) {
    for (auto& id : store.async_list({"tally", shard}, boost::asio::use_future).get()) {
      ids.insert(std::move(id));
    }
  }
  return ids;
}

/// The ids started on the activation `label` from log entry `from` on.
inline std::set<std::string> started_on(activity& log, const std::string& label,
                                        std::size_t from = 0) {
  std::lock_guard lock(log.mutex);
  std::set<std::string> ids;
  for (std::size_t i = from; i < log.entries.size(); ++i) {
    const auto& e = log.entries[i];
    if (e.what == activity::entry::start && e.label == label) ids.insert(e.id);
  }
  return ids;
}

/// Whether `condition()` comes to hold within `timeout` (scaled by TROUPE_TEST_TIMEFACTOR).
template <class Condition>
bool holds_within(Condition condition, duration timeout) {
  try {
    troupe::testkit::await_condition(condition, timeout);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace troupe::cluster::tally_test
