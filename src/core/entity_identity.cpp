#include "troupe/core/entity_identity.hpp"

#include <map>
#include <mutex>
#include <utility>

namespace troupe::detail {

const entity_home& intern_entity_home(std::string_view type_name, std::uint32_t shard_id) {
  // Node-based: references to elements stay valid as the map grows. Leaked on purpose, so that
  // entities stopping during static destruction still read a valid home.
  static auto* const homes = new std::map<std::pair<std::string, std::uint32_t>, entity_home>();
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  auto [it, inserted] = homes->try_emplace({std::string(type_name), shard_id});
  if (inserted)
    it->second =
        entity_home{std::string(type_name), shard_id, nullptr, nullptr, std::nullopt, nullptr};
  return it->second;
}

}  // namespace troupe::detail
