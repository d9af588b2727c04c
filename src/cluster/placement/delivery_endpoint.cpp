#include "cluster/placement/delivery_endpoint.hpp"

#include <troupe/cluster/errc.hpp>
#include <troupe/core/actor_system.hpp>
#include <troupe/persistence/serialization/wire.hpp>

#include <mutex>
#include <unordered_map>
#include <utility>

namespace troupe::cluster {

void delivery_endpoint::receive(sharded_delivery& d) {
  auto placement = placements_->find(d.type);
  if (!placement) {
    refuse(make_error_code(errc::unknown_manifest),
           "no sharded type '" + d.type + "' runs on this node");
    return;
  }
  const message_registry::entry* entry = registry_->find(d.manifest, d.version);
  if (entry == nullptr) {
    refuse(make_error_code(errc::unknown_manifest),
           "sharded type '" + d.type + "': no message type registered as '" + d.manifest + "' v" +
               std::to_string(d.version));
    return;
  }
  std::unique_ptr<troupe::detail::envelope_base> message;
  try {
    message.reset(entry->decode(d.payload));
  } catch (const std::exception& e) {
    refuse(make_error_code(errc::decode_error),
           "sharded type '" + d.type + "': message '" + d.manifest + "' undecodable: " + e.what());
    return;
  }
  message->sender = this->context().sender().target_ptr();
  if (!placement->arrive({d.shard, d.epoch, std::move(d.entity_id), std::move(message)})) {
    refuse(make_error_code(troupe::errc::recipient_terminated),
           "sharded type '" + d.type + "': its region is not running");
  }
}

void delivery_endpoint::refuse(std::error_code code, std::string reason) {
  if (auto* e = this->context().cell().release_current()) {
    this->context().system().dead_letters().publish(e, this->context().path(), code,
                                                    std::move(reason));
  }
}

remote_delivery deliver_over(remote_node& remote, std::shared_ptr<const message_registry> registry,
                             const message_registry::entry& entry, std::string type) {
  // One ref per owner's address, made on its first message: a path-addressed ref follows its
  // node across reconnects and restarts, so only an address seen for the first time is parsed.
  struct endpoints {
    std::mutex mutex;
    std::unordered_map<std::string, actor_ref<sharded_delivery>> by_address;
  };
  return [remote = &remote, registry = std::move(registry), entry = &entry, type = std::move(type),
          cache = std::make_shared<endpoints>()](
             const std::string& address, sharding::shard_id shard, sharding::shard_epoch epoch,
             const std::string& entity_id, const void* message, const untyped_ref& sender) {
    sharded_delivery d;
    d.type = type;
    d.shard = shard;
    d.epoch = epoch;
    d.entity_id = entity_id;
    d.manifest = entry->manifest.type_name;
    d.version = entry->manifest.version;
    persistence::byte_writer w(d.payload);
    entry->encode(w, message);
    actor_ref<sharded_delivery> to;
    {
      std::lock_guard lock(cache->mutex);
      auto it = cache->by_address.find(address);
      if (it == cache->by_address.end()) {
        const auto at = parse_node_address(address);
        if (!at) {
          throw cluster_error(errc::invalid_address,
                              "a member's address '" + address + "' is malformed");
        }
        // Members come and go over a cluster's life; a bound keeps a long-lived node's map small.
        constexpr std::size_t most_addresses = 4096;
        if (cache->by_address.size() >= most_addresses) cache->by_address.clear();
        it = cache->by_address
                 .emplace(address, remote->ref_to<sharded_delivery>(*at, delivery_endpoint_path))
                 .first;
      }
      to = it->second;
    }
    to.tell(std::move(d), sender);
  };
}

}  // namespace troupe::cluster
