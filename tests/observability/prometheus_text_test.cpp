// prometheus_text: the exposition of each metric type matches golden text, escaping follows
// format 0.0.4, and an independent parser written here reads every sample back.
#include <troupe/core/metrics.hpp>
#include <troupe/observability/prometheus_text.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using troupe::metric_type;
using troupe::metrics_registry;
using troupe::metrics_snapshot;
using troupe::observability::format_prometheus_value;
using troupe::observability::to_prometheus_text;

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan = std::numeric_limits<double>::quiet_NaN();

// -- golden text -----------------------------------------------------------------

TEST(PrometheusText, WritesACounterFamilyWithLabels) {
  metrics_registry registry;
  auto& messages = registry.counter_family("troupe_entity_messages_total",
                                           "Messages handled by entities", {"type", "shard"});
  messages.with({"cart", "17"}).add(3);
  messages.with({"cart", "3"}).add(1.5);
  EXPECT_EQ(to_prometheus_text(registry.collect()),
            "# HELP troupe_entity_messages_total Messages handled by entities\n"
            "# TYPE troupe_entity_messages_total counter\n"
            "troupe_entity_messages_total{type=\"cart\",shard=\"17\"} 3\n"
            "troupe_entity_messages_total{type=\"cart\",shard=\"3\"} 1.5\n");
}

TEST(PrometheusText, WritesAnUnlabelledGauge) {
  metrics_registry registry;
  registry.gauge_family("troupe_entities_alive", "Entities alive on this node").with({}).set(-2.5);
  EXPECT_EQ(to_prometheus_text(registry.collect()),
            "# HELP troupe_entities_alive Entities alive on this node\n"
            "# TYPE troupe_entities_alive gauge\n"
            "troupe_entities_alive -2.5\n");
}

TEST(PrometheusText, WritesAHistogramWithCumulativeBucketsSumAndCount) {
  metrics_registry registry;
  auto& wait = registry.histogram_family("troupe_mailbox_wait_seconds", "Mailbox queue wait",
                                         {"type"}, {0.25, 1, 2.5});
  auto& cart = wait.with({"cart"});
  cart.observe(0.25);
  cart.observe(0.5);
  cart.observe(4);
  EXPECT_EQ(to_prometheus_text(registry.collect()),
            "# HELP troupe_mailbox_wait_seconds Mailbox queue wait\n"
            "# TYPE troupe_mailbox_wait_seconds histogram\n"
            "troupe_mailbox_wait_seconds_bucket{type=\"cart\",le=\"0.25\"} 1\n"
            "troupe_mailbox_wait_seconds_bucket{type=\"cart\",le=\"1\"} 2\n"
            "troupe_mailbox_wait_seconds_bucket{type=\"cart\",le=\"2.5\"} 2\n"
            "troupe_mailbox_wait_seconds_bucket{type=\"cart\",le=\"+Inf\"} 3\n"
            "troupe_mailbox_wait_seconds_sum{type=\"cart\"} 4.75\n"
            "troupe_mailbox_wait_seconds_count{type=\"cart\"} 3\n");
}

TEST(PrometheusText, WritesAnUnlabelledHistogramWithOnlyLe) {
  metrics_registry registry;
  registry.histogram_family("x_seconds", "X", {}, {}).with({}).observe(1);
  EXPECT_EQ(to_prometheus_text(registry.collect()),
            "# HELP x_seconds X\n"
            "# TYPE x_seconds histogram\n"
            "x_seconds_bucket{le=\"+Inf\"} 1\n"
            "x_seconds_sum 1\n"
            "x_seconds_count 1\n");
}

TEST(PrometheusText, EscapesLabelValuesAndHelp) {
  metrics_registry registry;
  auto& family =
      registry.counter_family("e_total", "Back\\slash, \"quotes\" stay,\nnew line", {"key"});
  family.with({"a\\b\"c\nd"}).inc();
  EXPECT_EQ(to_prometheus_text(registry.collect()),
            "# HELP e_total Back\\\\slash, \"quotes\" stay,\\nnew line\n"
            "# TYPE e_total counter\n"
            "e_total{key=\"a\\\\b\\\"c\\nd\"} 1\n");
}

TEST(PrometheusText, ReplacesBytesThatAreNotUtf8) {
  metrics_registry registry;
  auto& family = registry.gauge_family("u", "caf\xC3\xA9", {"key"});
  family.with({"ok\xE2\x82\xAC bad\xFF\xC3 surrogate\xED\xA0\x80"}).set(1);
  EXPECT_EQ(to_prometheus_text(registry.collect()),
            "# HELP u caf\xC3\xA9\n"
            "# TYPE u gauge\n"
            "u{key=\"ok\xE2\x82\xAC bad\xEF\xBF\xBD\xEF\xBF\xBD "
            "surrogate\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"} 1\n");
}

TEST(PrometheusText, SortsFamiliesByNameSkipsEmptyOnesAndOmitsEmptyHelp) {
  metrics_snapshot snapshot;
  auto& z = snapshot.families.emplace_back();
  z.name = "z";
  z.type = metric_type::gauge;
  z.children.emplace_back().value = 1;
  auto& empty = snapshot.families.emplace_back();
  empty.name = "m_total";
  empty.help = "no children";
  auto& a = snapshot.families.emplace_back();
  a.name = "a";
  a.help = "A";
  a.type = metric_type::gauge;
  a.children.emplace_back().value = 2;
  EXPECT_EQ(to_prometheus_text(snapshot),
            "# HELP a A\n"
            "# TYPE a gauge\n"
            "a 2\n"
            "# TYPE z gauge\n"
            "z 1\n");
  EXPECT_EQ(to_prometheus_text(metrics_snapshot{}), "");
}

TEST(PrometheusText, WritesNumbersAsPrometheusReadsThem) {
  EXPECT_EQ(format_prometheus_value(inf), "+Inf");
  EXPECT_EQ(format_prometheus_value(-inf), "-Inf");
  EXPECT_EQ(format_prometheus_value(nan), "NaN");
  EXPECT_EQ(format_prometheus_value(0), "0");
  EXPECT_EQ(format_prometheus_value(42), "42");
  EXPECT_EQ(format_prometheus_value(-7), "-7");
  EXPECT_EQ(format_prometheus_value(0.1), "0.1");
  EXPECT_EQ(format_prometheus_value(0.005), "0.005");
  EXPECT_EQ(format_prometheus_value(1e-5), "1e-05");
  EXPECT_EQ(format_prometheus_value(1e6), "1e+06");
  EXPECT_EQ(format_prometheus_value(123456789), "123456789");
  EXPECT_EQ(format_prometheus_value(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(format_prometheus_value(std::numeric_limits<double>::max()), "1.7976931348623157e+308");
  EXPECT_EQ(format_prometheus_value(9007199254740993.0), "9007199254740992");
}

TEST(PrometheusText, WritesTheOverflowChildAndTheRefusalCounter) {
  metrics_registry registry;
  auto& hot = registry.gauge_family("hot", "Hot keys", {"key"}, 1);
  hot.with({"a"}).set(1);
  hot.with({"b"}).set(9);
  EXPECT_EQ(to_prometheus_text(registry.collect()),
            "# HELP hot Hot keys\n"
            "# TYPE hot gauge\n"
            "hot{key=\"a\"} 1\n"
            "hot{key=\"__overflow__\"} 9\n"
            "# HELP troupe_metrics_refused_children_total Label sets refused because their "
            "family was full, by family\n"
            "# TYPE troupe_metrics_refused_children_total counter\n"
            "troupe_metrics_refused_children_total{family=\"hot\"} 1\n");
}

// -- an independent parser ---------------------------------------------------------

using label_list = std::vector<std::pair<std::string, std::string>>;

struct parsed_sample {
  std::string name;
  label_list labels;
  double value = 0;
};

struct parsed_family {
  std::string name;
  std::optional<std::string> help;
  std::string type;
  std::vector<parsed_sample> samples;
};

// Reads text exposition format 0.0.4 as the Prometheus server does, strictly: returns an
// error message instead of guessing.
class exposition_parser {
 public:
  explicit exposition_parser(std::string_view text) : text_(text) {}

  std::optional<std::string> parse(std::vector<parsed_family>& out) {
    if (!text_.empty() && text_.back() != '\n') return "text does not end with a newline";
    std::size_t line_no = 0;
    while (!text_.empty()) {
      const auto end = text_.find('\n');
      const auto line = text_.substr(0, end);
      text_.remove_prefix(end + 1);
      ++line_no;
      if (auto error = parse_line(line, out)) {
        return "line " + std::to_string(line_no) + ": " + *error + ": " + std::string(line);
      }
    }
    return std::nullopt;
  }

 private:
  static bool is_name_char(char c, bool first, bool colon) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
           (!first && c >= '0' && c <= '9');
  }

  static std::string_view take_name(std::string_view& s, bool colon) {
    std::size_t n = 0;
    while (n < s.size() && is_name_char(s[n], n == 0, colon)) ++n;
    auto name = s.substr(0, n);
    s.remove_prefix(n);
    return name;
  }

  static std::optional<double> parse_value(std::string_view s) {
    if (s == "+Inf") return inf;
    if (s == "-Inf") return -inf;
    if (s == "NaN") return nan;
    if (s.empty()) return std::nullopt;
    const std::string copy(s);
    char* end = nullptr;
    const double v = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size()) return std::nullopt;
    // strtod also takes "inf", "nan" and hex floats; the format does not.
    for (char c : copy) {
      if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) {
        return std::nullopt;
      }
    }
    return v;
  }

  static std::optional<std::string> unescape(std::string_view s, bool quoted, std::string& out) {
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\\') {
        out += s[i];
        continue;
      }
      if (++i == s.size()) return "dangling backslash";
      if (s[i] == '\\') {
        out += '\\';
      } else if (s[i] == 'n') {
        out += '\n';
      } else if (s[i] == '"' && quoted) {
        out += '"';
      } else {
        return std::string("unknown escape \\") + s[i];
      }
    }
    return std::nullopt;
  }

  parsed_family* family_for(std::vector<parsed_family>& out, std::string_view name) {
    if (!out.empty() && out.back().name == name) return &out.back();
    return nullptr;
  }

  std::optional<std::string> parse_line(std::string_view line, std::vector<parsed_family>& out) {
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
      const bool help = line[2] == 'H';
      line.remove_prefix(7);
      const auto name = take_name(line, true);
      if (name.empty() || (!line.empty() && line.front() != ' ')) return "bad metric name";
      if (!line.empty()) line.remove_prefix(1);
      if (seen_.contains(std::string(name)) && !family_for(out, name)) {
        return "family " + std::string(name) + " appears twice";
      }
      auto* family = family_for(out, name);
      if (family == nullptr) {
        seen_.insert(std::string(name));
        family = &out.emplace_back();
        family->name = name;
      }
      if (!family->samples.empty()) return "HELP or TYPE after samples";
      if (help) {
        if (family->help) return "second HELP";
        std::string text;
        if (auto error = unescape(line, false, text)) return error;
        family->help = text;
      } else {
        if (!family->type.empty()) return "second TYPE";
        static const std::set<std::string_view> types{"counter", "gauge", "histogram", "summary",
                                                      "untyped"};
        if (!types.contains(line)) return "unknown type";
        family->type = line;
      }
      return std::nullopt;
    }
    if (line.empty() || line.front() == '#') return std::nullopt;  // comments

    parsed_sample sample;
    sample.name = take_name(line, true);
    if (sample.name.empty()) return "bad sample name";
    if (!line.empty() && line.front() == '{') {
      line.remove_prefix(1);
      while (!line.empty() && line.front() != '}') {
        const auto label = take_name(line, false);
        if (label.empty() || label.starts_with("__")) return "bad label name";
        if (!line.starts_with("=\"")) return "expected =\"";
        line.remove_prefix(2);
        std::size_t end = 0;
        while (end < line.size() && line[end] != '"') end += line[end] == '\\' ? 2 : 1;
        if (end >= line.size()) return "unterminated label value";
        std::string value;
        if (auto error = unescape(line.substr(0, end), true, value)) return error;
        for (const auto& [existing, unused] : sample.labels) {
          if (existing == label) return "label named twice";
        }
        sample.labels.emplace_back(label, std::move(value));
        line.remove_prefix(end + 1);
        if (line.starts_with(",")) line.remove_prefix(1);
      }
      if (line.empty()) return "unterminated labels";
      line.remove_prefix(1);
    }
    if (!line.starts_with(" ")) return "expected a space before the value";
    line.remove_prefix(1);
    const auto space = line.find(' ');  // an optional timestamp follows
    const auto value = parse_value(line.substr(0, space));
    if (!value) return "bad value";
    sample.value = *value;

    // The sample belongs to the family declared last: its name, or a histogram's suffixes.
    if (out.empty()) return "sample before any TYPE";
    auto& family = out.back();
    std::string_view base = sample.name;
    if (family.type == "histogram") {
      for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
        if (base.ends_with(suffix)) {
          base.remove_suffix(suffix.size());
          break;
        }
      }
      if (base == sample.name) return "histogram sample without a suffix";
    }
    if (base != family.name) return "sample outside its family";
    family.samples.push_back(std::move(sample));
    return std::nullopt;
  }

  std::string_view text_;
  std::set<std::string, std::less<>> seen_;
};

std::vector<parsed_family> parse_or_fail(const std::string& text) {
  std::vector<parsed_family> families;
  exposition_parser parser(text);
  const auto error = parser.parse(families);
  EXPECT_FALSE(error.has_value()) << *error << "\n" << text;
  return families;
}

bool same_number(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
}

// What the exposition must hold for a snapshot, derived from the snapshot directly.
std::vector<parsed_sample> expected_samples(const troupe::metric_family_snapshot& family) {
  std::vector<parsed_sample> out;
  for (const auto& child : family.children) {
    label_list labels;
    for (std::size_t i = 0; i < family.label_names.size(); ++i) {
      labels.emplace_back(family.label_names[i], child.label_values[i]);
    }
    if (family.type != metric_type::histogram) {
      out.push_back({family.name, labels, child.value});
      continue;
    }
    const auto& h = child.histogram;
    for (std::size_t i = 0; i <= h.upper_bounds.size(); ++i) {
      auto with_le = labels;
      // The writer's `le` text, read back, must be the bound itself; "%a" is exact.
      char bound[64] = "+Inf";
      if (i < h.upper_bounds.size()) std::snprintf(bound, sizeof bound, "%a", h.upper_bounds[i]);
      with_le.emplace_back("le", bound);
      out.push_back(
          {family.name + "_bucket", with_le, static_cast<double>(h.cumulative_counts[i])});
    }
    out.push_back({family.name + "_sum", labels, h.sum});
    out.push_back({family.name + "_count", labels, static_cast<double>(h.count)});
  }
  return out;
}

// A registry with every kind of metric, awkward label values and awkward numbers.
metrics_snapshot busy_snapshot() {
  metrics_registry registry;
  auto& messages = registry.counter_family("troupe_entity_messages_total", "Messages handled",
                                           {"type", "shard"});
  messages.with({"cart", "1"}).add(12);
  messages.with({"cart", "2"}).add(0.1);
  messages.with({"quote\"back\\slash", "new\nline"}).add(std::uint64_t{1} << 60);
  messages.with({"", "{}=,"}).inc();
  auto& depth =
      registry.gauge_family("troupe_buffer_depth", "Buffered\nmessages \\ by type", {"type"}, 3);
  depth.with({"a"}).set(-0.0);
  depth.with({"b"}).set(inf);
  depth.with({"c"}).set(-inf);
  depth.with({"d"}).set(nan);  // overflow
  depth.with({"e"}).set(1e-300);
  registry.gauge_family("troupe_uptime_seconds", "").with({}).set(1.7976931348623157e308);
  auto& latency = registry.histogram_family("troupe_ask_latency_seconds", "Ask latency", {"type"},
                                            troupe::exponential_buckets(0.001, 2, 12));
  for (int i = 0; i < 1000; ++i) latency.with({"cart"}).observe(0.0001 * i * i);
  latency.with({"empty"});
  auto& sizes = registry.histogram_family("troupe_group_size", "Group sizes", {}, {1, 2, 4, 8});
  sizes.with({}).observe(4);
  sizes.with({}).observe(nan);
  return registry.collect();
}

TEST(PrometheusText, ParsesBackEverySampleOfABusyRegistry) {
  const auto snapshot = busy_snapshot();
  const auto text = to_prometheus_text(snapshot);
  const auto parsed = parse_or_fail(text);

  std::vector<const troupe::metric_family_snapshot*> exported;
  for (const auto& family : snapshot.families) {
    if (!family.children.empty()) exported.push_back(&family);
  }
  ASSERT_EQ(parsed.size(), exported.size()) << text;
  for (std::size_t f = 0; f < parsed.size(); ++f) {
    const auto& got = parsed[f];
    const auto& want = *exported[f];
    SCOPED_TRACE(want.name);
    EXPECT_EQ(got.name, want.name);
    EXPECT_EQ(got.help.value_or(""), want.help);
    EXPECT_EQ(got.help.has_value(), !want.help.empty());
    const auto samples = expected_samples(want);
    ASSERT_EQ(got.samples.size(), samples.size());
    for (std::size_t s = 0; s < samples.size(); ++s) {
      EXPECT_EQ(got.samples[s].name, samples[s].name);
      ASSERT_EQ(got.samples[s].labels.size(), samples[s].labels.size());
      for (std::size_t l = 0; l < samples[s].labels.size(); ++l) {
        EXPECT_EQ(got.samples[s].labels[l].first, samples[s].labels[l].first);
        if (samples[s].labels[l].first == "le") {
          // Bounds compare as numbers: the expected text is "+Inf" or a hex float.
          EXPECT_EQ(std::strtod(got.samples[s].labels[l].second.c_str(), nullptr),
                    std::strtod(samples[s].labels[l].second.c_str(), nullptr));
        } else {
          EXPECT_EQ(got.samples[s].labels[l].second, samples[s].labels[l].second);
        }
      }
      EXPECT_TRUE(same_number(got.samples[s].value, samples[s].value))
          << got.samples[s].name << " " << got.samples[s].value << " vs " << samples[s].value;
    }
  }
}

TEST(PrometheusText, WritesBucketBoundsThatReadBackExactly) {
  const auto snapshot = busy_snapshot();
  const auto parsed = parse_or_fail(to_prometheus_text(snapshot));
  for (const auto& family : snapshot.families) {
    if (family.type != metric_type::histogram) continue;
    for (const auto& got : parsed) {
      if (got.name != family.name) continue;
      std::vector<double> bounds;
      for (const auto& sample : got.samples) {
        if (!sample.name.ends_with("_bucket")) continue;
        const auto& le = sample.labels.back();
        ASSERT_EQ(le.first, "le");
        if (le.second != "+Inf") bounds.push_back(std::strtod(le.second.c_str(), nullptr));
      }
      // One child's worth of finite bounds, repeated per child, each exactly the configured one.
      const auto& want = family.children.at(0).histogram.upper_bounds;
      ASSERT_EQ(bounds.size() % want.size(), 0U);
      for (std::size_t i = 0; i < bounds.size(); ++i) {
        EXPECT_EQ(bounds[i], want[i % want.size()]) << family.name << " bound " << i;
      }
    }
  }
}

TEST(PrometheusText, KeepsEveryHistogramCumulativeEndingWithInfEqualToCount) {
  const auto parsed = parse_or_fail(to_prometheus_text(busy_snapshot()));
  int histograms = 0;
  for (const auto& family : parsed) {
    if (family.type != "histogram") continue;
    // Per child (labels without le): buckets in order, then _sum, then _count.
    std::map<label_list, std::vector<std::pair<double, double>>> buckets;
    std::map<label_list, double> counts;
    for (const auto& sample : family.samples) {
      auto labels = sample.labels;
      if (sample.name.ends_with("_bucket")) {
        ASSERT_FALSE(labels.empty());
        ASSERT_EQ(labels.back().first, "le");
        const auto le = labels.back().second;
        labels.pop_back();
        const double bound = le == "+Inf" ? inf : std::strtod(le.c_str(), nullptr);
        buckets[labels].emplace_back(bound, sample.value);
      } else if (sample.name.ends_with("_count")) {
        counts[labels] = sample.value;
      }
    }
    ASSERT_FALSE(buckets.empty()) << family.name;
    for (const auto& [labels, series] : buckets) {
      ++histograms;
      SCOPED_TRACE(family.name);
      ASSERT_FALSE(series.empty());
      for (std::size_t i = 1; i < series.size(); ++i) {
        EXPECT_LT(series[i - 1].first, series[i].first) << "bounds increase";
        EXPECT_LE(series[i - 1].second, series[i].second) << "counts are cumulative";
      }
      EXPECT_EQ(series.back().first, inf);
      ASSERT_TRUE(counts.contains(labels));
      EXPECT_EQ(series.back().second, counts.at(labels));
    }
  }
  EXPECT_EQ(histograms, 3);  // latency{cart}, latency{empty}, group_size
}

TEST(PrometheusText, NamesEveryCounterWithTotal) {
  const auto parsed = parse_or_fail(to_prometheus_text(busy_snapshot()));
  int counters = 0;
  for (const auto& family : parsed) {
    EXPECT_FALSE(family.type.empty()) << family.name << " has no TYPE";
    if (family.type != "counter") continue;
    ++counters;
    EXPECT_TRUE(family.name.ends_with("_total")) << family.name;
  }
  EXPECT_EQ(counters, 2);  // messages and the refused-children counter
}

TEST(PrometheusText, ParserRejectsMalformedText) {
  for (const char* bad : {
           "# TYPE a gauge\na 1",                    // no final newline
           "# TYPE a gauge\na{k=\"v} 1\n",           // unterminated value
           "# TYPE a gauge\na{k=\"\\t\"} 1\n",       // unknown escape
           "# TYPE a gauge\na{__k=\"v\"} 1\n",       // reserved label
           "# TYPE a gauge\na inf\n",                // not a Prometheus number
           "# TYPE a gauge\nb 1\n",                  // sample outside its family
           "# TYPE h histogram\nh 1\n",              // histogram sample without suffix
           "# TYPE a gauge\n# TYPE a counter\n",     // second TYPE
           "# TYPE a gauge\na 1\n# TYPE a gauge\n",  // TYPE after samples
       }) {
    std::vector<parsed_family> families;
    EXPECT_TRUE(exposition_parser(bad).parse(families).has_value()) << bad;
  }
}

}  // namespace
