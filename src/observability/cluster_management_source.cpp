// The management source over a cluster node: where shards live comes from the consensus store
// (one read of cluster_node::read_state() per answer), what runs here from the regions'
// introspection. Message rates are the difference of two reads of a type's shards.
#include <troupe/core/actor.hpp>
#include <troupe/observability/cluster_management_source.hpp>
#include <troupe/observability/prometheus_text.hpp>
#include <troupe/sharding/shard_id.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace troupe::observability {
namespace {

using std::chrono::duration_cast;

/// Enough to name what makes a shard hot without sending the shard's whole top 10.
constexpr std::size_t hot_keys_per_shard = 3;

management_error unavailable(std::string message) {
  return {management_errc::unavailable, std::move(message)};
}

std::string seconds_text(duration d) {
  return std::to_string(duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

class cluster_source final : public management_source {
 public:
  cluster_source(std::shared_ptr<cluster::cluster_node> node, sharding::cluster_sharding& sharding,
                 const metrics_registry* metrics, cluster_source_options options)
      : node_(std::move(node)),
        sharding_(sharding),
        metrics_(metrics),
        timeout_(options.timeout),
        clock_(options.clock ? std::move(options.clock) : make_steady_clock()) {}

  management_result<members_view> members() override {
    auto state = read_state();
    if (!state) return state.error();
    members_view v;
    v.cluster = state->cluster;
    v.self = node_->self().node;
    for (const auto& m : state->members) {
      v.members.push_back({m.info.id.node, m.info.id.incarnation, m.info.roles, m.info.leaving,
                           m.info.app_version, m.address, cluster::to_string(m.reach)});
    }
    return v;
  }

  management_result<types_view> types() override {
    types_view v{sharding_.type_names()};
    std::sort(v.types.begin(), v.types.end());
    return v;
  }

  management_result<shards_view> shards(const std::string& type) override {
    if (auto missing = not_started(type)) return *missing;
    auto region = region_state_of(type);
    if (!region) return region.error();
    shards_view v;
    v.type = type;
    v.num_shards = region->num_shards;
    std::map<sharding::shard_id, shard_view> by_id;
    // The store says where each allocated shard lives; when it cannot be read, the region's
    // own view (owner and epoch it routes by) still answers.
    if (auto state = read_state()) {
      if (const auto* t = type_of(*state, type)) {
        v.coordinator = t->coordinator;
        for (const auto& p : t->shards) {
          auto& s = by_id[p.shard];
          s.shard = p.shard;
          s.owner = p.owner.node;
          s.epoch = p.epoch;
          s.owner_is_member = p.owner_is_member;
        }
      }
    }
    const time_point now = clock_->now();
    std::lock_guard lock(rates_mutex_);
    auto& previous = rates_[type];
    const double elapsed = std::chrono::duration<double>(now - previous.at).count();
    for (const auto& info : region->shards) {
      auto [it, inserted] = by_id.try_emplace(info.id);
      auto& s = it->second;
      s.shard = info.id;
      if (inserted) {
        s.owner = info.owner;
        s.epoch = info.epoch;
      }
      s.local = info.local;
      s.resident = info.resident;
      s.entities = info.entity_count;
      s.messages = info.messages_processed;
      if (!info.local) continue;
      const auto& hottest = info.stats.hottest;
      s.hot_keys.assign(hottest.begin(),
                        hottest.begin() + static_cast<std::ptrdiff_t>(
                                              std::min(hottest.size(), hot_keys_per_shard)));
      const auto last = previous.messages.find(info.id);
      if (last != previous.messages.end() && elapsed > 0 &&
          info.messages_processed >= last->second) {
        s.messages_per_second =
            static_cast<double>(info.messages_processed - last->second) / elapsed;
      }
    }
    previous.at = now;
    previous.messages.clear();
    for (const auto& [id, s] : by_id) {
      if (s.local) previous.messages[id] = s.messages;
      v.shards.push_back(s);
    }
    return v;
  }

  management_result<entity_view> entity(const std::string& type, const std::string& id) override {
    if (auto missing = not_started(type)) return *missing;
    auto region = region_state_of(type);
    if (!region) return region.error();
    if (region->num_shards == 0) return unavailable("the region of '" + type + "' has no shards");
    entity_view v;
    v.type = type;
    v.id = id;
    // As the region maps it: the type's own shard extractor, or the id's hash.
    try {
      v.shard = sharding_.shard_for(type, id);
    } catch (const std::exception& e) {
      return management_error{management_errc::internal,
                              "the shard of '" + id + "' is unknown: " + std::string(e.what())};
    }
    const auto info = std::find_if(region->shards.begin(), region->shards.end(),
                                   [&](const sharding::shard_info& s) { return s.id == v.shard; });
    if (info != region->shards.end() && !info->owner.empty()) {
      v.owner = info->owner;
      v.epoch = info->epoch;
      v.local = info->local;
    } else if (auto state = read_state()) {
      // The region has not routed to the shard yet: the store may still know its owner.
      if (const auto* t = type_of(*state, type)) {
        for (const auto& p : t->shards) {
          if (p.shard != v.shard) continue;
          v.owner = p.owner.node;
          v.epoch = p.epoch;
          v.local = p.owner.node == node_->self().node;
        }
      }
    }
    if (info != region->shards.end() && info->local) {
      try {
        const auto ids = sharding_.entity_ids(type, v.shard, timeout_);
        v.active = std::find(ids.begin(), ids.end(), id) != ids.end();
      } catch (const std::exception& e) {
        return unavailable("the shard did not list its entities: " + std::string(e.what()));
      }
    }
    return v;
  }

  readiness_view readiness() override {
    const auto joined = node_->joined();
    if (joined.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      return {false, "the node has not joined the cluster yet"};
    }
    try {
      joined.get();
    } catch (const std::exception& e) {
      return {false, "joining the cluster failed: " + std::string(e.what())};
    }
    // A leave ends with the node fenced: say why it went.
    if (leaving_.load()) return {false, "the node is leaving the cluster"};
    if (node_->fenced()) return {false, "the node fenced itself: it holds no lease"};
    for (const auto& type : sharding_.type_names()) {
      if (!node_->ready(type)) {
        return {false, "the region of type '" + type +
                           "' is not registered or has not read its allocations yet"};
      }
    }
    return {true, {}};
  }

  std::optional<std::string> metrics_text() override {
    if (metrics_ == nullptr) return std::nullopt;
    return to_prometheus_text(metrics_->collect());
  }

  management_result<leave_view> leave() override {
    leave_view v{node_->self().node, leaving_.exchange(true)};
    if (v.already_leaving) return v;
    node_->leave([node = v.node](std::error_code ec) {
      if (ec) {
        troupe::logger()->warn("management: leave of '{}' ended with: {}", node, ec.message());
      } else {
        troupe::logger()->info("management: node '{}' left the cluster", node);
      }
    });
    return v;
  }

  management_result<void> rebalance(const std::string& type) override {
    if (auto missing = not_started(type)) return *missing;
    if (node_->fenced()) {
      return management_error{management_errc::conflict,
                              "this node has fenced itself: it takes part in no rebalance"};
    }
    if (!node_->rebalance(type)) {
      // Started on the sharding but without a coordinator runner here (a proxy-only type).
      return management_error{management_errc::conflict,
                              "no coordinator of type '" + type + "' runs on this node"};
    }
    return {};
  }

 private:
  struct rate_sample {
    time_point at{};
    std::map<sharding::shard_id, std::uint64_t> messages;
  };

  std::optional<management_error> not_started(const std::string& type) const {
    const auto names = sharding_.type_names();
    if (std::find(names.begin(), names.end(), type) != names.end()) return std::nullopt;
    return management_error{management_errc::not_found,
                            "type '" + type + "' is not started on this node"};
  }

  management_result<cluster::cluster_state> read_state() const {
    try {
      auto state = node_->read_state();
      if (state.wait_for(timeout_) != std::future_status::ready) {
        return unavailable("the consensus store did not answer within " + seconds_text(timeout_));
      }
      return state.get();
    } catch (const std::exception& e) {
      return unavailable("cannot read the cluster state: " + std::string(e.what()));
    }
  }

  management_result<sharding::region_state> region_state_of(const std::string& type) const {
    try {
      return sharding_.state(type, timeout_);
    } catch (const std::exception& e) {
      return unavailable("the region of '" + type + "' did not answer: " + e.what());
    }
  }

  static const cluster::type_state* type_of(const cluster::cluster_state& state,
                                            const std::string& type) {
    for (const auto& t : state.types) {
      if (t.type == type) return &t;
    }
    return nullptr;
  }

  std::shared_ptr<cluster::cluster_node> node_;
  sharding::cluster_sharding& sharding_;
  const metrics_registry* metrics_;
  duration timeout_;
  std::shared_ptr<troupe::clock> clock_;
  std::atomic<bool> leaving_{false};
  std::mutex rates_mutex_;
  std::map<std::string, rate_sample> rates_;  // guarded by rates_mutex_
};

}  // namespace

std::shared_ptr<management_source> make_cluster_management_source(
    std::shared_ptr<cluster::cluster_node> node, sharding::cluster_sharding& sharding,
    const metrics_registry* metrics, cluster_source_options options) {
  if (!node) throw std::invalid_argument("make_cluster_management_source: a node is required");
  return std::make_shared<cluster_source>(std::move(node), sharding, metrics, std::move(options));
}

}  // namespace troupe::observability
