// Writes a metrics snapshot in the Prometheus text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/).
#include "troupe/observability/prometheus_text.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <system_error>
#include <vector>

namespace troupe::observability {

namespace {

constexpr std::string_view replacement_character = "\xEF\xBF\xBD";  // U+FFFD

// The length of the well-formed UTF-8 sequence at the start of `s` (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), or 0 when it is not one.
std::size_t utf8_sequence_length(std::string_view s) noexcept {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const auto continuation = [&](std::size_t i) {
    return i < s.size() && (byte(i) & 0xC0U) == 0x80U;
  };
  const unsigned char lead = byte(0);
  if (lead < 0x80U) return 1;
  if (lead >= 0xC2U && lead <= 0xDFU) return continuation(1) ? 2 : 0;
  if (lead >= 0xE0U && lead <= 0xEFU) {
    if (!continuation(1) || !continuation(2)) return 0;
    if (lead == 0xE0U && byte(1) < 0xA0U) return 0;   // overlong
    if (lead == 0xEDU && byte(1) >= 0xA0U) return 0;  // surrogate
    return 3;
  }
  if (lead >= 0xF0U && lead <= 0xF4U) {
    if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
    if (lead == 0xF0U && byte(1) < 0x90U) return 0;   // overlong
    if (lead == 0xF4U && byte(1) >= 0x90U) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

// Appends `s` with `\` and newline escaped, and `"` too when `quote` (label values; help
// text keeps its quotes), replacing bytes that are not UTF-8.
void append_escaped(std::string& out, std::string_view s, bool quote) {
  while (!s.empty()) {
    const std::size_t length = utf8_sequence_length(s);
    if (length == 0) {
      out += replacement_character;
      s.remove_prefix(1);
      continue;
    }
    const char c = s.front();
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out.append(s.data(), length);
    }
    s.remove_prefix(length);
  }
}

void append_value(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
  } else {
    // Shortest round-trip form: fixed or scientific, whichever is shorter ("0.25", "1e+06").
    char buffer[32];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    out.append(buffer, result.ptr);
  }
}

// `{a="x",b="y"}` plus an optional `le` last; nothing at all when there is no label.
void append_labels(std::string& out, const std::vector<std::string>& names,
                   const std::vector<std::string>& values, const std::string* le = nullptr) {
  const std::size_t n = std::min(names.size(), values.size());
  if (n == 0 && le == nullptr) return;
  out += '{';
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) out += ',';
    out += names[i];
    out += "=\"";
    append_escaped(out, values[i], true);
    out += '"';
  }
  if (le != nullptr) {
    if (n > 0) out += ',';
    out += "le=\"";
    out += *le;
    out += '"';
  }
  out += '}';
}

void append_sample(std::string& out, std::string_view name, std::string_view suffix,
                   const std::vector<std::string>& label_names,
                   const std::vector<std::string>& label_values, double value,
                   const std::string* le = nullptr) {
  out += name;
  out += suffix;
  append_labels(out, label_names, label_values, le);
  out += ' ';
  append_value(out, value);
  out += '\n';
}

void append_family(std::string& out, const metric_family_snapshot& family) {
  if (!family.help.empty()) {
    out += "# HELP ";
    out += family.name;
    out += ' ';
    append_escaped(out, family.help, false);
    out += '\n';
  }
  out += "# TYPE ";
  out += family.name;
  out += ' ';
  out += to_string(family.type);
  out += '\n';

  for (const auto& child : family.children) {
    if (family.type != metric_type::histogram) {
      append_sample(out, family.name, "", family.label_names, child.label_values, child.value);
      continue;
    }
    const auto& h = child.histogram;
    std::string le;
    const std::size_t finite = std::min(h.upper_bounds.size(), h.cumulative_counts.size());
    for (std::size_t i = 0; i < finite; ++i) {
      le.clear();
      append_value(le, h.upper_bounds[i]);
      append_sample(out, family.name, "_bucket", family.label_names, child.label_values,
                    static_cast<double>(h.cumulative_counts[i]), &le);
    }
    le = "+Inf";
    append_sample(out, family.name, "_bucket", family.label_names, child.label_values,
                  static_cast<double>(h.count), &le);
    append_sample(out, family.name, "_sum", family.label_names, child.label_values, h.sum);
    append_sample(out, family.name, "_count", family.label_names, child.label_values,
                  static_cast<double>(h.count));
  }
}

}  // namespace

std::string format_prometheus_value(double value) {
  std::string out;
  append_value(out, value);
  return out;
}

std::string to_prometheus_text(const metrics_snapshot& snapshot) {
  std::vector<const metric_family_snapshot*> families;
  families.reserve(snapshot.families.size());
  for (const auto& family : snapshot.families) {
    if (!family.children.empty()) families.push_back(&family);
  }
  std::stable_sort(families.begin(), families.end(),
                   [](const auto* a, const auto* b) { return a->name < b->name; });
  std::string out;
  for (const auto* family : families) append_family(out, *family);
  return out;
}

}  // namespace troupe::observability
