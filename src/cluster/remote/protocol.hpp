#pragma once
/// The payloads of the node-to-node frames (frame.hpp has the header), with the codec's
/// primitives (troupe/persistence/serialization/wire.hpp):
///
///   handshake         string cluster, varint protocol, node_id from, node_address to
///   handshake_accept  node_id
///   handshake_refuse  string reason
///   heartbeat(_ack)   (empty)
///   message           recipient, manifest, u8 has_sender [ref sender], payload (the rest)
///   system            varint sub-kind, then: watch: varint key, recipient spec
///                                            unwatch / terminated: varint key
///                                            undeliverable: varint export id, string reason
///
///   node_id           string host, varint port, fixed64 incarnation
///   recipient         varint v: 0 = a spec follows, used once; odd = slot v>>1 is defined by
///                     the spec that follows; even = slot v>>1 defined earlier on this stream
///   spec              u8 0 + varint export id | u8 1 + string path
///   manifest          varint v: odd = slot v>>1 defined by string name, varint version;
///                     even = slot v>>1 defined earlier on this stream
///   ref               u8 flags (bit 0: the actor lives on the sending node, else a node_id
///                     follows; bit 1: temporary, e.g. an ask's reply target), varint export
///                     id (0: addressed by path), string path; or u8 4 alone: an empty ref
///                     (inside a payload)
///
/// Slots replace repeated paths and type names by small numbers: each stream numbers its own,
/// from 1, so a stream's reader keeps one table per stream.

#include <troupe/cluster/node_address.hpp>
#include <troupe/persistence/serialization/wire.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace troupe::cluster::detail {

enum class system_kind : std::uint8_t { watch = 1, unwatch = 2, terminated = 3, undeliverable = 4 };

inline constexpr std::uint8_t ref_on_sender = 1;
inline constexpr std::uint8_t ref_temporary = 2;
inline constexpr std::uint8_t ref_empty = 4;  // the whole ref: an empty actor_ref

struct recipient_spec {
  std::uint64_t export_id = 0;  // 0: by path
  std::string path;
};

/// An actor ref as it travels, before it is resolved to a target.
struct wire_ref {
  bool empty = false;
  bool temporary = false;
  std::optional<node_id> owner;  // none: the actor lives on the node that wrote the ref
  std::uint64_t export_id = 0;   // 0: addressed by path
  std::string path;
};

struct handshake {
  std::string cluster;
  std::uint64_t protocol = 0;
  node_id from;
  node_address to;
};

void write_string(persistence::byte_writer& w, std::string_view s);
std::string read_string(persistence::byte_reader& r);
void write_node_id(persistence::byte_writer& w, const node_id& n);
node_id read_node_id(persistence::byte_reader& r);
void write_spec(persistence::byte_writer& w, const recipient_spec& s);
recipient_spec read_spec(persistence::byte_reader& r);
/// Writes a non-empty ref; `owner` null: the actor lives on the writing node.
void write_ref(persistence::byte_writer& w, bool temporary, const node_id* owner,
               std::uint64_t export_id, std::string_view path);
/// Reads a ref; throws persistence_error for unknown flags or one with neither id nor path.
wire_ref read_ref(persistence::byte_reader& r);
void write_handshake(persistence::byte_writer& w, const handshake& h);
handshake read_handshake(persistence::byte_reader& r);

}  // namespace troupe::cluster::detail
