#include <troupe/cluster/cluster_messages.hpp>

#include "cluster/remote/node_core.hpp"

#include <limits>

namespace troupe::cluster::detail {

using persistence::byte_reader;
using persistence::byte_writer;
using persistence::codec;

void write_sharded_delivery(byte_writer& w, const sharded_delivery& d) {
  codec<std::string>::encode(w, d.type);
  w.write_varint(d.shard);
  codec<std::int64_t>::encode(w, d.epoch);
  codec<std::string>::encode(w, d.entity_id);
  w.write_varint(d.flush);
  codec<bool>::encode(w, d.flushed);
  if (d.flush != 0) {
    if (!d.flushed) codec<std::string>::encode(w, d.origin);
    return;
  }
  codec<std::int64_t>::encode(w, d.origin_run);
  w.write_varint(d.origin_round);
  if (d.entry == nullptr || (d.value == nullptr && d.encoded.empty())) {
    throw cluster_error(errc::decode_error,
                        "a sharded delivery of type '" + d.type + "' carries no message");
  }
  codec<std::string>::encode(w, d.entry->manifest.type_name);
  w.write_varint(d.entry->manifest.version);
  if (d.value != nullptr) {
    d.entry->encode(w, d.value);
  } else {
    w.write_raw(d.encoded);
  }
}

sharded_delivery read_sharded_delivery(byte_reader& r) {
  sharded_delivery d;
  d.type = codec<std::string>::decode(r);
  const auto shard = r.read_varint();
  if (shard > std::numeric_limits<std::uint32_t>::max()) r.fail("shard out of range");
  d.shard = static_cast<std::uint32_t>(shard);
  d.epoch = codec<std::int64_t>::decode(r);
  d.entity_id = codec<std::string>::decode(r);
  d.flush = r.read_varint();
  d.flushed = codec<bool>::decode(r);
  if (d.flush != 0) {
    if (!d.flushed) d.origin = codec<std::string>::decode(r);
    return d;
  }
  d.origin_run = codec<std::int64_t>::decode(r);
  const auto round = r.read_varint();
  if (round > std::numeric_limits<std::uint32_t>::max()) r.fail("origin round out of range");
  d.origin_round = static_cast<std::uint32_t>(round);
  const auto name = r.read_raw(r.read_count());
  const std::string_view type_name(reinterpret_cast<const char*>(name.data()), name.size());
  const auto version = r.read_varint();
  if (version > std::numeric_limits<std::uint32_t>::max()) r.fail("version out of range");
  const message_registry* registry = registry_in_scope();
  if (registry == nullptr) {
    throw cluster_error(errc::unknown_manifest, "a sharded delivery is read by the remoting only");
  }
  d.entry = registry->find(type_name, static_cast<std::uint32_t>(version));
  if (d.entry == nullptr) {
    throw cluster_error(errc::unknown_manifest,
                        "sharded type '" + d.type + "': no message type registered as '" +
                            std::string(type_name) + "' v" + std::to_string(version));
  }
  d.message.reset(d.entry->decode(r.read_raw(r.remaining())));
  d.value = d.message->payload();
  return d;
}

}  // namespace troupe::cluster::detail
