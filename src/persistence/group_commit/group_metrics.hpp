#pragma once
// What a group-commit writer records when the plugin was given a metrics registry: how long each
// write waited from its submission to its commit, and how many writes each group took.

#include <troupe/core/metrics.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <utility>

namespace troupe::persistence::group_commit {

/// Null pointers (the default) record nothing; the writer then reads no clock either.
struct group_metrics {
  /// Keeps the registry alive as long as the writer records into it.
  std::shared_ptr<metrics_registry> registry;
  histogram* write_seconds = nullptr;
  histogram* group_size = nullptr;

  /// The histograms of `store` ("sqlite", "postgres") in `r`; nothing when `r` is null.
  static group_metrics of(std::shared_ptr<metrics_registry> r, const std::string& store) {
    group_metrics m;
    if (!r) return m;
    // From 100 µs (one group on a warm disk) to ~6.5 s (a store that stalls).
    m.write_seconds = &r->histogram_family("troupe_persistence_write_seconds",
                                           "From a write's submission to its commit (group commit "
                                           "included), as the store's writer thread saw it",
                                           {"store"}, exponential_buckets(0.0001, 2, 17))
                           .with({store});
    m.group_size = &r->histogram_family("troupe_persistence_group_size",
                                        "Writes committed by one transaction (group commit)",
                                        {"store"}, exponential_buckets(1, 2, 13))
                        .with({store});
    m.registry = std::move(r);
    return m;
  }

  [[nodiscard]] bool on() const noexcept { return write_seconds != nullptr; }
};

}  // namespace troupe::persistence::group_commit
