// Copies sharding's own counts into the registry on each collect (see the header).
#include <troupe/core/errc.hpp>
#include <troupe/observability/sharding_metrics.hpp>

#include "observability/counter_advance.hpp"

#include <cctype>
#include <exception>
#include <system_error>
#include <vector>

namespace troupe::observability {
namespace {

// Enough for the hottest ids of ten types; past it one overflow child stands for the rest.
constexpr std::size_t hot_keys_per_type = 10;
constexpr std::size_t max_hot_keys = 100;
// Each layer has a score of codes at most: far below this.
constexpr std::size_t max_dead_letter_reasons = 64;

using detail::advance;

/// The `reason` label of a dead letter's code: the core's enumerator name ("mailbox_full"), or
/// for another layer's code its message as one word ("peer queue full": "peer_queue_full").
std::string reason_label(const std::error_code& code) {
  if (!code) return "unspecified";
  if (code.category() == troupe::error_category()) {
    return troupe::to_string(static_cast<troupe::errc>(code.value()));
  }
  std::string out;
  for (const char c : code.message()) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else if (!out.empty() && out.back() != '_') {
      out.push_back('_');
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "code_" + std::to_string(code.value()) : out;
}

}  // namespace

sharding_metrics::sharding_metrics(metrics_registry& registry, sharding::cluster_sharding& sharding,
                                   actor_system& system, duration timeout)
    : registry_(registry),
      sharding_(sharding),
      system_(system),
      timeout_(timeout),
      messages_(registry.counter_family(
          "troupe_shard_messages_total",
          "Messages delivered to the entities of a shard on this node", {"type", "shard"})),
      entities_(registry.gauge_family(
          "troupe_shard_entities", "Entities running in a shard on this node", {"type", "shard"})),
      mailbox_depth_(registry.gauge_family("troupe_shard_mailbox_depth",
                                           "Messages in a shard's mailbox when last sampled",
                                           {"type", "shard"})),
      buffered_(registry.gauge_family(
          "troupe_region_buffered_messages",
          "Messages a region holds for shards that are starting or have no home yet", {"type"})),
      outstanding_(registry.gauge_family(
          "troupe_region_outstanding_messages",
          "With a shard capacity: messages sent to a region's shards and not yet handled",
          {"type"})),
      hot_keys_(registry.gauge_family("troupe_hot_key_messages",
                                      "Estimated recent messages of the hottest entity ids",
                                      {"type", "key"}, max_hot_keys)),
      activations_(registry.counter_family(
          "troupe_shard_activations_total",
          "Entities started in a shard on this node (first message, restart, remembered)",
          {"type", "shard"})),
      passivations_(registry.counter_family("troupe_passivations_total",
                                            "Passivations the shards of a type began on this node",
                                            {"type", "cause"})),
      buffer_overflows_(registry.counter_family(
          "troupe_buffer_overflows_total",
          "Messages refused because a region's, route's or shard's buffer was full", {"type"})),
      dead_letters_(registry.counter_family("troupe_dead_letters_total",
                                            "Messages that were not delivered, by reason",
                                            {"reason"}, max_dead_letter_reasons)),
      refresh_errors_(registry.counter_family(
          "troupe_metrics_refresh_errors_total",
          "Refreshes that could not read a sharded type (its region answered too late)",
          {"type"})) {
  hook_ = registry_.add_collect_hook([this] { refresh(); });
}

sharding_metrics::~sharding_metrics() { registry_.remove_collect_hook(hook_); }

void sharding_metrics::refresh() {
  std::lock_guard lock(mutex_);
  for (const auto& [code, count] : system_.dead_letters().count_by_code()) {
    const std::string reason = reason_label(code);
    advance(dead_letters_.with({reason}), last_dead_letters_[reason], count);
  }
  for (const auto& type : sharding_.type_names()) refresh_type(type);
}

void sharding_metrics::refresh_type(const std::string& type) {
  sharding::region_state state;
  try {
    state = sharding_.state(type, timeout_);
  } catch (const std::exception&) {
    // A busy region: its figures stay as last read, and the miss is counted.
    refresh_errors_.with({type}).inc();
    return;
  }
  buffered_.with({type}).set(static_cast<double>(state.buffered));
  outstanding_.with({type}).set(static_cast<double>(state.outstanding));
  advance(buffer_overflows_.with({type}), last_overflows_[type], state.buffer_overflows);
  for (std::size_t i = 0; i < state.passivations.size(); ++i) {
    const std::string cause = sharding::to_string(static_cast<sharding::passivation_cause>(i));
    advance(passivations_.with({type, cause}), last_passivations_[{type, cause}],
            state.passivations[i]);
  }

  std::set<std::string> shards;
  for (const auto& info : state.shards) {
    if (!info.local) continue;
    const std::string shard = std::to_string(info.id);
    shards.insert(shard);
    advance(messages_.with({type, shard}), last_messages_[{type, shard}], info.messages_processed);
    advance(activations_.with({type, shard}), last_activations_[{type, shard}], info.activations);
    entities_.with({type, shard}).set(static_cast<double>(info.entity_count));
    mailbox_depth_.with({type, shard}).set(static_cast<double>(info.stats.mailbox_depth));
  }
  for (const auto& gone : shards_of_[type]) {
    if (shards.contains(gone)) continue;
    const std::string_view labels[] = {type, gone};
    messages_.remove(labels);
    activations_.remove(labels);
    entities_.remove(labels);
    mailbox_depth_.remove(labels);
  }
  shards_of_[type] = std::move(shards);

  std::set<std::string> keys;
  for (const auto& [key, count] : state.hottest) {
    if (keys.size() == hot_keys_per_type) break;
    keys.insert(key);
    hot_keys_.with({type, key}).set(static_cast<double>(count));
  }
  for (const auto& gone : hot_keys_of_[type]) {
    if (keys.contains(gone)) continue;
    const std::string_view labels[] = {type, gone};
    hot_keys_.forget(labels);  // keys churn: keep no child of a key that cooled
  }
  hot_keys_of_[type] = std::move(keys);
}

}  // namespace troupe::observability
