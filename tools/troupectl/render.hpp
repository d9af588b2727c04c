#pragma once
/// What troupectl prints for people: aligned tables and a progress bar. Nothing here knows the
/// API; commands turn its JSON into rows.

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace troupectl {

/// Columns padded to their widest cell (counted in code points, so UTF-8 ids line up).
class table {
 public:
  explicit table(std::vector<std::string> headers);
  void add(std::vector<std::string> row);
  [[nodiscard]] bool empty() const noexcept { return rows_.empty(); }
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

/// `[#####.....] left/total label`: the filled part is what is done (total - left).
[[nodiscard]] std::string progress_bar(std::size_t left, std::size_t total, std::size_t width,
                                       const std::string& label);

/// A rate with one decimal ("12.5"), or "-" when unknown (negative).
[[nodiscard]] std::string format_rate(double per_second);

}  // namespace troupectl
