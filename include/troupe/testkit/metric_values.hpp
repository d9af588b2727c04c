#pragma once
/// Reading one number out of a metrics snapshot, for tests of what the runtime records.

#include <troupe/core/metrics.hpp>

#include <optional>
#include <string>
#include <vector>

namespace troupe::testkit {

/// The family `name` in `s`, or null.
inline const metric_family_snapshot* find_family(const metrics_snapshot& s,
                                                 const std::string& name) {
  for (const auto& f : s.families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

/// The child of `name` with these label values, or null when it is not exported.
inline const metric_child_snapshot* find_child(const metrics_snapshot& s, const std::string& name,
                                               const std::vector<std::string>& labels) {
  const auto* f = find_family(s, name);
  if (f == nullptr) return nullptr;
  for (const auto& c : f->children) {
    if (c.label_values == labels) return &c;
  }
  return nullptr;
}

/// The counter's or gauge's value of that child; nullopt when it is not exported.
inline std::optional<double> metric_value(const metrics_snapshot& s, const std::string& name,
                                          const std::vector<std::string>& labels = {}) {
  const auto* c = find_child(s, name, labels);
  if (c == nullptr) return std::nullopt;
  return c->value;
}

/// How many observations that histogram child holds (0 when it is not exported).
inline std::uint64_t observations(const metrics_snapshot& s, const std::string& name,
                                  const std::vector<std::string>& labels = {}) {
  const auto* c = find_child(s, name, labels);
  return c == nullptr ? 0 : c->histogram.count;
}

}  // namespace troupe::testkit
