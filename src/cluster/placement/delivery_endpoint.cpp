#include "cluster/placement/delivery_endpoint.hpp"

#include <troupe/cluster/errc.hpp>
#include <troupe/core/actor_system.hpp>
#include <troupe/persistence/serialization/wire.hpp>

#include <mutex>
#include <unordered_map>
#include <utility>

namespace troupe::cluster {

untyped_ref delivery_endpoint::start(actor_system& system,
                                     std::shared_ptr<const placement_directory> placements) {
  return untyped_ref(troupe::detail::intrusive_ptr<troupe::detail::actor_target>(
      new delivery_endpoint(system.impl(), std::move(placements)), troupe::detail::adopt));
}

void delivery_endpoint::close(const untyped_ref& endpoint) {
  if (auto* e = dynamic_cast<delivery_endpoint*>(endpoint.target())) {
    e->closed_.store(true, std::memory_order_release);
  }
}

void delivery_endpoint::enqueue(troupe::detail::envelope_base* e) noexcept {
  std::unique_ptr<troupe::detail::envelope_base> in(e);
  try {
    if (is_terminated()) {
      refuse(std::move(in), make_error_code(troupe::errc::recipient_terminated),
             "this node's cluster has stopped");
      return;
    }
    if (in->type() != typeid(sharded_delivery)) {
      refuse(std::move(in), make_error_code(errc::decode_error),
             "the cluster's delivery endpoint takes sharded deliveries only");
      return;
    }
    const untyped_ref sender(in->sender);
    receive(*static_cast<sharded_delivery*>(in->payload()), sender, in);
  } catch (const std::exception& ex) {
    // Out of memory on the way: whatever is still here goes to dead letters.
    if (in) {
      refuse(std::move(in), make_error_code(errc::decode_error),
             std::string("the delivery endpoint failed: ") + ex.what());
    }
  } catch (...) {
    if (in) refuse(std::move(in), make_error_code(errc::decode_error), "the endpoint failed");
  }
}

void delivery_endpoint::send_system(troupe::detail::system_message* m) noexcept {
  m->on_undelivered(*this);  // it is never watched: a watcher hears it is gone
  delete m;
}

void delivery_endpoint::receive(sharded_delivery& d, const untyped_ref& sender,
                                std::unique_ptr<troupe::detail::envelope_base>& in) {
  auto placement = placements_->find(d.type);
  if (!placement) {
    refuse(std::move(in), make_error_code(errc::unknown_manifest),
           "no sharded type '" + d.type + "' runs on this node");
    return;
  }
  if (d.flush != 0 && d.flushed) {
    placement->flushed(d.shard, d.flush);
    return;
  }
  if (placement->meant_for_an_earlier_run(d.epoch)) {
    // Sent to this node's previous run (queued while it was down, delivered once this run
    // listened at the same address). This run holds none of what its sender sent before, so a
    // marker is answered at once, and a message goes to dead letters: passed on, it would reach
    // the shard after the newer messages its sender sent since.
    if (d.flush != 0) {
      placement->answer_flush(sender, d.shard, d.flush);
      return;
    }
    refuse(std::move(in), make_error_code(troupe::errc::recipient_terminated),
           "sharded type '" + d.type + "', shard " + std::to_string(d.shard) + ": sent at epoch " +
               std::to_string(d.epoch) +
               " to an earlier run of this node, whose messages were lost with it");
    return;
  }
  if (d.flush != 0) {
    sharding::remote_arrival marker;
    marker.shard = d.shard;
    marker.epoch = d.epoch;
    marker.flush_token = d.flush;
    marker.reply_to = sender;
    marker.origin = std::move(d.origin);
    if (!placement->arrive(marker)) {
      refuse(std::move(in), make_error_code(troupe::errc::recipient_terminated),
             "sharded type '" + d.type + "': its region is not running");
    }
    return;
  }
  if (!d.message) {
    refuse(std::move(in), make_error_code(errc::decode_error),
           "sharded type '" + d.type + "': the delivery carries no message");
    return;
  }
  const sharding::origin_stamp stamp{d.origin_run, d.origin_round};
  if (placement->overtaken(d.shard, stamp)) {
    refuse(std::move(in), make_error_code(troupe::errc::recipient_terminated),
           "sharded type '" + d.type + "', shard " + std::to_string(d.shard) +
               ": its node stopped waiting for a flush of the shard after sending it and has "
               "sent newer messages since (delivered now, it would follow them)");
    return;
  }
  d.message->sender = sender.target_ptr();
  sharding::remote_arrival arrival;
  arrival.stamp = stamp;
  arrival.shard = d.shard;
  arrival.epoch = d.epoch;
  arrival.entity_id = std::move(d.entity_id);
  arrival.message = std::move(d.message);
  if (!placement->arrive(arrival)) {
    d.message = std::move(arrival.message);  // the dead letter carries it
    refuse(std::move(in), make_error_code(troupe::errc::recipient_terminated),
           "sharded type '" + d.type + "': its region is not running");
  }
}

void delivery_endpoint::refuse(std::unique_ptr<troupe::detail::envelope_base> in,
                               std::error_code code, std::string reason) {
  troupe::detail::dead_letters_of(system_).publish(in.release(), delivery_endpoint_path, code,
                                                   std::move(reason));
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

namespace {

/// A delivery of `entity_id`'s message for `shard` at `epoch`, without the message yet.
sharded_delivery addressed(const message_registry::entry& entry, const std::string& type,
                           sharding::shard_id shard, sharding::shard_epoch epoch,
                           const std::string& entity_id, const sharding::origin_stamp& stamp) {
  sharded_delivery d;
  d.type = type;
  d.shard = shard;
  d.epoch = epoch;
  d.entity_id = entity_id;
  d.origin_run = stamp.run;
  d.origin_round = stamp.round;
  d.entry = &entry;
  return d;
}

/// Encodes `message` with `entry` now (its sender keeps it) and tells it to `to`, the owner's
/// endpoint.
void deliver(const actor_ref<sharded_delivery>& to, const message_registry::entry& entry,
             const std::string& type, sharding::shard_id shard, sharding::shard_epoch epoch,
             const std::string& entity_id, const void* message, const untyped_ref& sender,
             const sharding::origin_stamp& stamp) {
  sharded_delivery d = addressed(entry, type, shard, epoch, entity_id, stamp);
  // Room for a typical message at once, not a reallocation at each doubling.
  d.encoded.reserve(64);
  persistence::byte_writer w(d.encoded);
  entry.encode(w, message);
  to.tell(std::move(d), sender);
}

/// One shard's link to its owner's endpoint: the ref resolved once, not per message.
class endpoint_link final : public sharding::placement::remote_link {
 public:
  endpoint_link(actor_ref<sharded_delivery> to, std::shared_ptr<const message_registry> registry,
                const message_registry::entry& entry, std::string type, sharding::shard_id shard,
                sharding::shard_epoch epoch, std::int64_t run, round_counter round)
      : to_(std::move(to)),
        registry_(std::move(registry)),
        entry_(entry),
        type_(std::move(type)),
        shard_(shard),
        epoch_(epoch),
        run_(run),
        round_(std::move(round)) {}

  void send(const std::string& entity_id, const void* message,
            std::unique_ptr<troupe::detail::envelope_base>& held) override {
    // The id first: it may be inside the envelope.
    sharded_delivery d = addressed(entry_, type_, shard_, epoch_, entity_id,
                                   {run_, round_->load(std::memory_order_acquire)});
    const untyped_ref sender(held->sender);
    d.value = message;
    d.message = std::move(held);
    try {
      to_.tell(std::move(d), sender);
    } catch (...) {
      if (d.message) held = std::move(d.message);  // not taken: its sender still has it
      throw;
    }
  }

 private:
  actor_ref<sharded_delivery> to_;
  std::shared_ptr<const message_registry> registry_;  // keeps entry_ alive
  const message_registry::entry& entry_;
  std::string type_;
  sharding::shard_id shard_;
  sharding::shard_epoch epoch_;
  std::int64_t run_;
  round_counter round_;
};

}  // namespace

remote_delivery deliver_over(std::shared_ptr<endpoint_refs> refs,
                             std::shared_ptr<const message_registry> registry,
                             const message_registry::entry& entry, std::string type) {
  return [refs = std::move(refs), registry = std::move(registry), entry = &entry,
          type = std::move(type)](const std::string& address, sharding::shard_id shard,
                                  sharding::shard_epoch epoch, const std::string& entity_id,
                                  const void* message, const untyped_ref& sender,
                                  const sharding::origin_stamp& stamp) {
    deliver(refs->at(address), *entry, type, shard, epoch, entity_id, message, sender, stamp);
  };
}

remote_linker link_over(std::shared_ptr<endpoint_refs> refs,
                        std::shared_ptr<const message_registry> registry,
                        const message_registry::entry& entry, std::string type) {
  return
      [refs = std::move(refs), registry = std::move(registry), entry = &entry,
       type = std::move(type)](const std::string& address, sharding::shard_id shard,
                               sharding::shard_epoch epoch, std::int64_t run, round_counter round) {
        return std::make_shared<endpoint_link>(refs->at(address), registry, *entry, type, shard,
                                               epoch, run, std::move(round));
      };
}

flush_delivery flush_over(std::shared_ptr<endpoint_refs> refs, std::string type,
                          untyped_ref self_endpoint) {
  return [refs = std::move(refs), type = std::move(type), self = std::move(self_endpoint)](
             const std::string& address, sharding::shard_id shard, sharding::shard_epoch epoch,
             std::uint64_t token, const untyped_ref& reply_to, const std::string& origin) {
    sharded_delivery d;
    d.type = type;
    d.shard = shard;
    d.epoch = epoch;
    d.flush = token;
    d.origin = origin;
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
