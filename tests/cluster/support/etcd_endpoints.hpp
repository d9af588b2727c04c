#pragma once
// The real etcd a test may use: TROUPE_ETCD_ENDPOINTS, as `scripts/etcd.sh start` prints it
// (comma-separated URLs). Tests that need etcd skip without it.

#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace troupe::cluster::test {

/// The endpoints in TROUPE_ETCD_ENDPOINTS; empty when it is not set.
inline std::vector<std::string> etcd_endpoints() {
  std::vector<std::string> out;
  const char* env = std::getenv("TROUPE_ETCD_ENDPOINTS");
  if (env == nullptr) return out;
  std::stringstream in(env);
  std::string one;
  while (std::getline(in, one, ',')) {
    if (!one.empty()) out.push_back(one);
  }
  return out;
}

/// A name no earlier run used, so keys left in etcd by other runs never meet this one's.
inline std::string fresh_name(const std::string& stem) {
  std::random_device rd;
  return stem + "-" + std::to_string(rd()) + std::to_string(rd());
}

}  // namespace troupe::cluster::test
