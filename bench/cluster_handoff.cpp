// The hand-off benchmark (issue 16): how long a shard's move between two live nodes keeps its
// messages from being handled, and that none is lost on the way.
//
// - Nodes a and b host the `counter` type (each counts into tallies of its own, so a count says
//   where a message was handled); node p is a proxy whose region a sender thread tells hits to,
//   round-robin over `entities` ids that all map to one shard S, with at most 64 unhandled. All
//   three are in this process, over TCP on 127.0.0.1, on the etcd in TROUPE_ETCD_ENDPOINTS (else
//   the in-process model).
// - The coordinators' strategy moves S to the other node when the bench arms it (it places every
//   other shard as least-shards does); the coordinator's tick asks it every second. The move is
//   a hand-off (docs/cluster.md, "Hand-off"): both regions stop routing S, the old owner drains
//   it and reports it stopped, the coordinator commits, the new owner raises S's fence and the
//   messages that waited go there.
// - One move's time: from the strategy's answer until the new node's tallies count a message.

#include "cluster_handoff.hpp"

#include <troupe/sharding/coordination/allocation_strategy.hpp>

#include "cluster_nodes.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace troupe::bench::handoff {
namespace {

namespace coord = troupe::sharding::coordination;
using troupe::sharding::shard_id;

/// What the bench and the coordinators' strategies share.
struct move_control {
  shard_id shard = 0;
  std::atomic<bool> armed{false};
  std::atomic<std::int64_t> begun_ns{0};  // when the strategy last answered "move it"
};

/// Least-shards, except that when armed its rebalance moves the one shard to the other region.
class move_on_demand final : public coord::allocation_strategy {
 public:
  explicit move_on_demand(std::shared_ptr<move_control> control)
      : control_(std::move(control)), others_(coord::make_least_shards_strategy()) {}

  std::optional<coord::member_id> allocate(shard_id shard,
                                           std::span<const coord::region_view> regions) override {
    if (shard == control_->shard && from_) {
      for (const auto& r : regions) {
        if (r.region != *from_) return r.region;
      }
    }
    return others_->allocate(shard, regions);
  }

  std::vector<shard_id> rebalance(std::span<const coord::region_view> regions,
                                  std::span<const shard_id>) override {
    if (!control_->armed.exchange(false)) return {};
    from_.reset();
    for (const auto& r : regions) {
      if (std::find(r.shards.begin(), r.shards.end(), control_->shard) != r.shards.end()) {
        from_ = r.region;
      }
    }
    if (!from_) return {};
    control_->begun_ns = steady_ns();
    return {control_->shard};
  }

 private:
  std::shared_ptr<move_control> control_;
  std::unique_ptr<coord::allocation_strategy> others_;
  std::optional<coord::member_id> from_;
};

/// The first `count` of "e0", "e1", ... that map to e0's shard of `shards`.
std::vector<std::string> ids_of_one_shard(std::int64_t count, std::uint32_t shards) {
  const auto shard = troupe::sharding::shard_of("e0", shards);
  std::vector<std::string> ids;
  for (std::int64_t i = 0; static_cast<std::int64_t>(ids.size()) < count; ++i) {
    std::string id = "e" + std::to_string(i);
    if (troupe::sharding::shard_of(id, shards) == shard) ids.push_back(std::move(id));
  }
  return ids;
}

}  // namespace

run_result run(std::size_t workers, std::int64_t moves, std::int64_t entities) {
  constexpr std::uint32_t shards = troupe::sharding::default_number_of_shards;
  const auto ids = ids_of_one_shard(entities, shards);
  std::size_t highest = 0;
  for (const auto& id : ids) highest = std::max<std::size_t>(highest, std::stoul(id.substr(1)));
  auto control = std::make_shared<move_control>();
  control->shard = troupe::sharding::shard_of(ids.front(), shards);
  auto tune = [control](tc::cluster_node_options& o) {
    o.with_rebalance_interval(std::chrono::milliseconds(1));  // every tick; the bench arms it
    o.strategy = [control](const troupe::sharding::region_settings&) {
      return std::make_unique<move_on_demand>(control);
    };
  };
  etcd_model model(etcd_endpoints_from_env());
  tallies on_a(highest + 1);
  tallies on_b(highest + 1);
  cluster_member a("a", workers, model, tcp(), {"127.0.0.1", 0}, tune);
  cluster_member b("b", workers, model, tcp(), {"127.0.0.1", 0}, tune);
  cluster_member p("p", workers, model, tcp(), {"127.0.0.1", 0}, tune);
  auto hosted_a = a.start(&on_a, false, shards);
  auto hosted_b = b.start(&on_b, false, shards);
  auto proxy = p.start(nullptr, true, shards);

  sender load(proxy, ids, [&] {
    return on_a.handled().load(std::memory_order_acquire) +
           on_b.handled().load(std::memory_order_acquire);
  });
  wait_for([&] { return on_a.handled().load() + on_b.handled().load() > 0; },
           std::chrono::seconds(30), "the shard's first message");
  std::vector<double> millis;
  for (std::int64_t m = 0; m < moves; ++m) {
    // The shard's owner is where its messages are handled now.
    const std::int64_t a_before = on_a.handled().load();
    const std::int64_t b_before = on_b.handled().load();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const bool owner_is_a = on_a.handled().load() > a_before;
    const bool owner_is_b = on_b.handled().load() > b_before;
    check(owner_is_a != owner_is_b, "the shard's messages are handled on exactly one node");
    const tallies& target = owner_is_a ? on_b : on_a;
    const std::int64_t target_before = target.handled().load();
    control->armed = true;
    wait_for([&] { return target.handled().load() > target_before; }, std::chrono::seconds(20),
             "move " + std::to_string(m + 1));
    millis.push_back(static_cast<double>(steady_ns() - control->begun_ns.load()) / 1e6);
  }
  load.stop();
  const std::int64_t sent = load.sent();
  const auto handled = [&] { return on_a.handled().load() + on_b.handled().load(); };
  try {
    wait_for([&] { return handled() >= sent; }, std::chrono::seconds(10),
             "every message to be handled");
  } catch (const bench_failure&) {
  }
  const std::int64_t lost = sent - handled();
  check(lost == 0, std::to_string(lost) + " of " + std::to_string(sent) +
                       " messages were never handled across the moves");
  std::sort(millis.begin(), millis.end());
  const double p99 = percentile(millis, 0.99);
  return {p99,
          {{"p50_ms", percentile(millis, 0.5)},
           {"p99_ms", p99},
           {"lost", static_cast<double>(lost)},
           {"sent", static_cast<double>(sent)}}};
}

}  // namespace troupe::bench::handoff
