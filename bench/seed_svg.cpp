#include "seed_svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace troupe::bench::seed {

namespace {

// Log scale from 10^2 to 10^8 msgs/s.
constexpr double min_decade = 2;
constexpr double max_decade = 8;
constexpr double plot_left = 330;
constexpr double plot_right = 1060;
constexpr double row_height = 34;
constexpr double top = 92;

double x_of(double v) {
  const double d = std::clamp(std::log10(std::max(v, 1.0)), min_decade, max_decade);
  return plot_left + (d - min_decade) / (max_decade - min_decade) * (plot_right - plot_left);
}

std::string short_value(double v) {
  char buf[32];
  if (v >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2f M", v / 1e6);
  } else if (v >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1f k", v / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  }
  return buf;
}

void bar(std::ostream& out, double y, double h, double v, const char* color) {
  out << "<rect x='" << plot_left << "' y='" << y << "' width='" << x_of(v) - plot_left
      << "' height='" << h << "' fill='" << color << "'/>\n";
}

void text(std::ostream& out, double x, double y, const std::string& s, const char* extra = "") {
  out << "<text x='" << x << "' y='" << y << "' " << extra << ">" << s << "</text>\n";
}

}  // namespace

bool write_svg(const std::string& path, const std::vector<table_row>& rows,
               const std::vector<measurement>& results) {
  const std::size_t n = std::min(rows.size(), results.size());
  const double height = top + row_height * static_cast<double>(n) + 40;
  std::ostringstream out;
  out << "<svg xmlns='http://www.w3.org/2000/svg' width='1180' height='" << height
      << "' font-family='sans-serif' font-size='12'>\n"
      << "<rect width='100%' height='100%' fill='white'/>\n";
  text(out, 20, 28,
       "Sharding by key with 1 ms of awaited I/O per message: messages per second (log scale)",
       "font-size='17' font-weight='bold'");
  // Legend.
  out << "<rect x='20' y='44' width='14' height='12' fill='#2b6cb0'/>";
  text(out, 40, 55, "Troupe (median)");
  out << "<rect x='160' y='46' width='14' height='7' fill='#dd6b20'/>";
  text(out, 180, 55, "guide, Python 3.14 (published)");
  out << "<rect x='390' y='46' width='14' height='7' fill='#a0aec0'/>";
  text(out, 410, 55, "best other implementation (issue 4)");
  out << "<line x1='660' y1='42' x2='660' y2='58' stroke='#c53030' stroke-width='2'/>";
  text(out, 668, 55, "bound of the workload (busiest key or shard)");
  // Decade grid.
  const char* const decade_names[] = {"100", "1 k", "10 k", "100 k", "1 M", "10 M", "100 M"};
  for (int d = static_cast<int>(min_decade); d <= static_cast<int>(max_decade); ++d) {
    const double x = x_of(std::pow(10.0, d));
    out << "<line x1='" << x << "' y1='" << top - 8 << "' x2='" << x << "' y2='" << height - 34
        << "' stroke='#e2e8f0'/>\n";
    text(out, x, top - 12, decade_names[d - static_cast<int>(min_decade)],
         "text-anchor='middle' fill='#4a5568'");
  }
  for (std::size_t i = 0; i < n; ++i) {
    const auto& r = rows[i];
    const auto& m = results[i];
    const double y = top + row_height * static_cast<double>(i);
    if (i > 0 && r.config.how != rows[i - 1].config.how) {  // a new group of rows
      out << "<line x1='20' y1='" << y - 4 << "' x2='" << plot_right << "' y2='" << y - 4
          << "' stroke='#a0aec0' stroke-dasharray='4 3'/>\n";
    }
    text(out, plot_left - 8, y + 13, r.label, "text-anchor='end'");
    if (m.msgs_per_s > 0) {
      bar(out, y, 14, m.msgs_per_s, m.error.empty() ? "#2b6cb0" : "#e53e3e");
      text(out, x_of(m.msgs_per_s) + 6, y + 12, short_value(m.msgs_per_s), "font-weight='bold'");
    }
    if (r.guide && *r.guide > 0) bar(out, y + 16, 6, *r.guide, "#dd6b20");
    if (r.best_other) bar(out, y + 23, 6, *r.best_other, "#a0aec0");
    const double bx = x_of(m.bound_msgs_per_s);
    out << "<line x1='" << bx << "' y1='" << y - 2 << "' x2='" << bx << "' y2='" << y + 30
        << "' stroke='#c53030' stroke-width='2'/>\n";
  }
  text(out, 20, height - 14,
       "10,000 messages over 1,000 keys (scaled: 1,000,000 over 100,000), seed 42; batch = up to "
       "200 messages per awaited write; entities use 64 shards.",
       "fill='#4a5568'");
  out << "</svg>\n";
  std::ofstream file(path);
  file << out.str();
  if (!file) {
    std::fprintf(stderr, "troupe_bench_seed: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace troupe::bench::seed
