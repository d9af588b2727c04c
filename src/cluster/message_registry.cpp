#include <troupe/cluster/message_registry.hpp>

namespace troupe::cluster {

void message_registry::insert(std::type_index type, entry e) {
  if (e.manifest.type_name.empty() || e.manifest.version == 0) {
    throw cluster_error(errc::unknown_manifest,
                        "a message manifest needs a name and a version >= 1");
  }
  auto key = std::make_pair(e.manifest.type_name, e.manifest.version);
  if (by_type_.contains(type)) {
    throw cluster_error(errc::unknown_manifest, "message type registered twice, now as '" +
                                                    key.first + "' v" + std::to_string(key.second));
  }
  if (by_manifest_.contains(key)) {
    throw cluster_error(
        errc::unknown_manifest,
        "manifest '" + key.first + "' v" + std::to_string(key.second) + " registered twice");
  }
  auto shared = std::make_shared<const entry>(std::move(e));
  by_type_.emplace(type, shared);
  by_manifest_.emplace(std::move(key), std::move(shared));
}

const message_registry::entry* message_registry::find(const std::type_info& type) const noexcept {
  auto it = by_type_.find(std::type_index(type));
  return it == by_type_.end() ? nullptr : it->second.get();
}

const message_registry::entry* message_registry::find(std::string_view type_name,
                                                      std::uint32_t version) const noexcept {
  auto it = by_manifest_.find(std::make_pair(type_name, version));
  return it == by_manifest_.end() ? nullptr : it->second.get();
}

}  // namespace troupe::cluster
