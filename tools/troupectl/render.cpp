// Tables and the progress bar: plain text, no terminal control but the '\r' of the bar.
#include "troupectl/render.hpp"

#include <algorithm>
#include <cstdio>

namespace troupectl {

namespace {

std::size_t display_width(const std::string& s) {
  // Count lead bytes only: continuation bytes of UTF-8 are 10xxxxxx.
  return static_cast<std::size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0U) != 0x80U; }));
}

}  // namespace

table::table(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void table::add(std::vector<std::string> row) {
  row.resize(headers_.size());
  rows_.push_back(std::move(row));
}

void table::print(std::ostream& out) const {
  std::vector<std::size_t> widths(headers_.size(), 0);
  const auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], display_width(row[i]));
    }
  };
  measure(headers_);
  for (const auto& row : rows_) measure(row);
  const auto line = [&](const std::vector<std::string>& row) {
    std::string text;
    for (std::size_t i = 0; i < row.size(); ++i) {
      text += row[i];
      if (i + 1 < row.size()) text.append(widths[i] - display_width(row[i]) + 2, ' ');
    }
    out << text << '\n';
  };
  line(headers_);
  for (const auto& row : rows_) line(row);
}

std::string progress_bar(std::size_t left, std::size_t total, std::size_t width,
                         const std::string& label) {
  const std::size_t done = total == 0 ? width : (total - std::min(left, total)) * width / total;
  std::string bar = "[";
  bar.append(done, '#');
  bar.append(width - done, '.');
  bar += "] ";
  bar += std::to_string(left) + "/" + std::to_string(total) + " " + label;
  return bar;
}

std::string format_rate(double per_second) {
  if (per_second < 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", per_second);
  return text;
}

}  // namespace troupectl
