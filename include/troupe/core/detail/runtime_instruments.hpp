#pragma once
/// INTERNAL. What the runtime records on its hot paths once a registry is attached
/// (actor_system::record_metrics): looked up once, read through one pointer, so that a path with
/// no registry pays one relaxed load and a branch.

#include <troupe/core/metrics.hpp>

#include <memory>

namespace troupe::detail {

class system_impl;

/// How an ask ended, for troupe_ask_duration_seconds' `outcome`.
enum class ask_outcome { replied, timed_out, failed };

/// The runtime's instruments in one registry. Each set lives as long as its system, also after
/// another registry replaced it, so a pointer read once stays valid while the system does.
struct runtime_instruments {
  std::shared_ptr<metrics_registry> registry;
  histogram* ask_replied = nullptr;
  histogram* ask_timed_out = nullptr;
  histogram* ask_failed = nullptr;

  [[nodiscard]] histogram& ask(ask_outcome outcome) const noexcept {
    switch (outcome) {
      case ask_outcome::replied:
        return *ask_replied;
      case ask_outcome::timed_out:
        return *ask_timed_out;
      case ask_outcome::failed:
        break;
    }
    return *ask_failed;
  }
};

/// The instruments of `system` now; null when no registry is attached (or `system` is null).
[[nodiscard]] const runtime_instruments* instruments_of(const system_impl* system) noexcept;

}  // namespace troupe::detail
