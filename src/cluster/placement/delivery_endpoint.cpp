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
  if (d.flush != 0) {
    if (d.flushed) {
      placement->flushed(d.shard, d.flush);
      return;
    }
    sharding::remote_arrival marker;
    marker.shard = d.shard;
    marker.epoch = d.epoch;
    marker.flush_token = d.flush;
    marker.reply_to = this->context().sender();
    if (!placement->arrive(std::move(marker))) {
      refuse(make_error_code(troupe::errc::recipient_terminated),
             "sharded type '" + d.type + "': its region is not running");
    }
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
  sharding::remote_arrival arrival;
  arrival.shard = d.shard;
  arrival.epoch = d.epoch;
  arrival.entity_id = std::move(d.entity_id);
  arrival.message = std::move(message);
  if (!placement->arrive(std::move(arrival))) {
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

class endpoint_refs {
 public:
  explicit endpoint_refs(remote_node& remote) : remote_(remote) {}

  /// The endpoint at `address`. Throws cluster_error(invalid_address) for a malformed one.
  actor_ref<sharded_delivery> at(const std::string& address) {
    std::lock_guard lock(mutex_);
    auto it = by_address_.find(address);
    if (it == by_address_.end()) {
      const auto where = parse_node_address(address);
      if (!where) {
        throw cluster_error(errc::invalid_address,
                            "a member's address '" + address + "' is malformed");
      }
      // Members come and go over a cluster's life; a bound keeps a long-lived node's map small.
      constexpr std::size_t most_addresses = 4096;
      if (by_address_.size() >= most_addresses) by_address_.clear();
      it = by_address_
               .emplace(address, remote_.ref_to<sharded_delivery>(*where, delivery_endpoint_path))
               .first;
    }
    return it->second;
  }

 private:
  remote_node& remote_;
  std::mutex mutex_;
  // A path-addressed ref follows its node across reconnects and restarts, so only an address
  // seen for the first time is parsed.
  std::unordered_map<std::string, actor_ref<sharded_delivery>> by_address_;
};

std::shared_ptr<endpoint_refs> make_endpoint_refs(remote_node& remote) {
  return std::make_shared<endpoint_refs>(remote);
}

remote_delivery deliver_over(std::shared_ptr<endpoint_refs> refs,
                             std::shared_ptr<const message_registry> registry,
                             const message_registry::entry& entry, std::string type) {
  return [refs = std::move(refs), registry = std::move(registry), entry = &entry,
          type = std::move(type)](const std::string& address, sharding::shard_id shard,
                                  sharding::shard_epoch epoch, const std::string& entity_id,
                                  const void* message, const untyped_ref& sender) {
    sharded_delivery d;
    d.type = type;
    d.shard = shard;
    d.epoch = epoch;
    d.entity_id = entity_id;
    d.manifest = entry->manifest.type_name;
    d.version = entry->manifest.version;
    persistence::byte_writer w(d.payload);
    entry->encode(w, message);
    refs->at(address).tell(std::move(d), sender);
  };
}

flush_delivery flush_over(std::shared_ptr<endpoint_refs> refs, std::string type,
                          untyped_ref self_endpoint) {
  return [refs = std::move(refs), type = std::move(type), self = std::move(self_endpoint)](
             const std::string& address, sharding::shard_id shard, sharding::shard_epoch epoch,
             std::uint64_t token, const untyped_ref& reply_to) {
    sharded_delivery d;
    d.type = type;
    d.shard = shard;
    d.epoch = epoch;
    d.flush = token;
    refs->at(address).tell(std::move(d), reply_to ? reply_to : self);
  };
}

flush_answer answer_flush_of(std::string type) {
  return [type = std::move(type)](const untyped_ref& reply_to, sharding::shard_id shard,
                                  std::uint64_t token) {
    sharded_delivery d;
    d.type = type;
    d.shard = shard;
    d.flush = token;
    d.flushed = true;
    reply_to.tell_any(std::move(d));
  };
}

}  // namespace troupe::cluster
