#pragma once
/// Sharding's figures as metrics: what the regions and shards of one node already count,
/// copied into a metrics_registry each time the registry is collected (a scrape of /metrics),
/// so that no message pays for them twice.
///
///     troupe::metrics_registry registry;
///     troupe::observability::sharding_metrics metrics(registry, sharding, system);
///     // ... every registry.collect() now carries the families below, fresh.
///
/// troupe_shard_messages_total{type,shard}     messages delivered to the shard's entities here
/// troupe_shard_activations_total{type,shard}  entities started in the shard here
/// troupe_shard_entities{type,shard}           entities running in the shard
/// troupe_shard_mailbox_depth{type,shard}      the shard's mailbox depth (sampled)
/// troupe_region_buffered_messages{type}       messages waiting for a shard to start or a home
/// troupe_region_outstanding_messages{type}    with a shard capacity: sent and not yet handled
/// troupe_hot_key_messages{type,key}           the hottest ids' recent message counts (top 10
///                                             per type, 100 keys at most)
/// troupe_passivations_total{type,cause}       passivations begun here: idle, max_entities,
///                                             requested (by the entity), shard_stopped
/// troupe_buffer_overflows_total{type}         messages refused over a full buffer
/// troupe_dead_letters_total{reason}           messages that were not delivered, by the code
///                                             they were published with ("mailbox_full")
/// troupe_metrics_refresh_errors_total{type}   types a refresh could not read (a busy region)
///
/// A shard that leaves the node stops being exported; its counter comes back with its count if
/// the shard returns.

#include <troupe/core/actor_system.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/core/metrics.hpp>
#include <troupe/sharding/cluster_sharding.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

namespace troupe::observability {

class sharding_metrics {
 public:
  /// Hooks into `registry`; `registry`, `sharding` and `system` must outlive this object.
  /// `timeout` bounds each region's answer during a refresh.
  sharding_metrics(metrics_registry& registry, sharding::cluster_sharding& sharding,
                   actor_system& system, duration timeout = std::chrono::seconds(1));
  /// Unhooks; a collect under way finishes first.
  ~sharding_metrics();
  sharding_metrics(const sharding_metrics&) = delete;
  sharding_metrics& operator=(const sharding_metrics&) = delete;

  /// Reads every started type now (collect() calls it).
  void refresh();

 private:
  void refresh_type(const std::string& type);

  metrics_registry& registry_;
  sharding::cluster_sharding& sharding_;
  actor_system& system_;
  duration timeout_;
  metric_family<counter>& messages_;
  metric_family<gauge>& entities_;
  metric_family<gauge>& mailbox_depth_;
  metric_family<gauge>& buffered_;
  metric_family<gauge>& outstanding_;
  metric_family<gauge>& hot_keys_;
  metric_family<counter>& activations_;
  metric_family<counter>& passivations_;
  metric_family<counter>& buffer_overflows_;
  metric_family<counter>& dead_letters_;
  metric_family<counter>& refresh_errors_;
  std::mutex mutex_;
  // The source's last count of each exported counter: a counter adds what came since.
  std::map<std::pair<std::string, std::string>, std::uint64_t> last_messages_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> last_activations_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> last_passivations_;
  std::map<std::string, std::uint64_t> last_overflows_;
  std::map<std::string, std::uint64_t> last_dead_letters_;
  // What is exported now, to stop exporting what went.
  std::map<std::string, std::set<std::string>> shards_of_;
  std::map<std::string, std::set<std::string>> hot_keys_of_;
  std::uint64_t hook_ = 0;
};

}  // namespace troupe::observability
