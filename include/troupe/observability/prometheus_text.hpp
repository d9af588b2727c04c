#pragma once
/// The Prometheus text exposition format, version 0.0.4, of a metrics snapshot: what a node
/// serves on `GET /metrics`.
///
///     auto text = troupe::observability::to_prometheus_text(registry.collect());

#include <troupe/core/metrics.hpp>

#include <string>
#include <string_view>

namespace troupe::observability {

/// The Content-Type header that goes with to_prometheus_text's output.
inline constexpr std::string_view prometheus_text_content_type =
    "text/plain; version=0.0.4; charset=utf-8";

/// Writes every family that has children, sorted by name, its children in the snapshot's
/// order: `# HELP` (when the help is not empty), `# TYPE`, then one line per sample. Histograms
/// give cumulative `<name>_bucket{le="..."}` lines ending with `le="+Inf"`, then `<name>_sum`
/// and `<name>_count`. Numbers are `+Inf`, `-Inf`, `NaN` or the shortest decimal that reads
/// back as the same double; label values and help are escaped, and bytes that are not UTF-8
/// become U+FFFD.
[[nodiscard]] std::string to_prometheus_text(const metrics_snapshot& snapshot);

/// One number as the exposition writes it (see to_prometheus_text).
[[nodiscard]] std::string format_prometheus_value(double value);

}  // namespace troupe::observability
