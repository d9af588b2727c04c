#pragma once
// etcd's client endpoints as the command line gives them: "127.0.0.1:2379,127.0.0.1:2479".

#include <string>
#include <string_view>
#include <vector>

namespace cluster_demo {

/// "a,b,c" as {"a", "b", "c"} (empty parts dropped).
inline std::vector<std::string> split_endpoints(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    if (comma != 0) out.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace cluster_demo
