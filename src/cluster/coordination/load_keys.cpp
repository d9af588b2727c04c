#include "cluster/coordination/load_keys.hpp"

#include "cluster/membership/key_text.hpp"
#include "cluster/membership/members.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace troupe::cluster {

namespace coord = sharding::coordination;
using key_text::hex;
using key_text::next_line;
using key_text::parse_decimal;
using key_text::parse_incarnation;

std::string load_prefix(std::string_view cluster, std::string_view type) {
  return cluster_prefix(cluster) + "/load/" + std::string(type) + "/";
}

std::string load_key(std::string_view cluster, std::string_view type,
                     const coord::member_id& region) {
  return load_prefix(cluster, type) + region.node + "#" + hex(region.incarnation);
}

std::string encode_loads(std::span<const coord::shard_load> loads) {
  std::string out;
  for (const auto& l : loads) {
    const auto rate = static_cast<long long>(std::llround(std::max(0.0, l.per_second)));
    out += std::to_string(l.shard) + "=" + std::to_string(rate) + "\n";
  }
  return out;
}

std::optional<coord::load_report> decode_load_report(std::string_view cluster,
                                                     std::string_view type, std::string_view key,
                                                     std::string_view value) {
  auto region = load_region_of(cluster, type, key);
  if (!region) return std::nullopt;
  coord::load_report report{std::move(*region), {}};
  while (!value.empty()) {
    const std::string_view line = next_line(value);
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    auto shard = parse_decimal<sharding::shard_id>(line.substr(0, eq));
    auto rate = parse_decimal<std::uint64_t>(line.substr(eq + 1));
    if (shard && rate) report.loads.push_back({*shard, static_cast<double>(*rate)});
  }
  std::sort(report.loads.begin(), report.loads.end(),
            [](const auto& a, const auto& b) { return a.shard < b.shard; });
  return report;
}

std::optional<coord::member_id> load_region_of(std::string_view cluster, std::string_view type,
                                               std::string_view key) {
  const std::string prefix = load_prefix(cluster, type);
  if (!key.starts_with(prefix)) return std::nullopt;
  return parse_incarnation(key.substr(prefix.size()));
}

}  // namespace troupe::cluster
