#include "troupe/core/entity_identity.hpp"

#include <mutex>
#include <unordered_set>

namespace troupe::detail {

const std::string& intern_type_name(std::string_view name) {
  // Node-based: references to elements stay valid as the set grows. Leaked on purpose, so that
  // entities stopping during static destruction still read a valid name.
  static auto* const names = new std::unordered_set<std::string>();
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  return *names->emplace(name).first;
}

}  // namespace troupe::detail
