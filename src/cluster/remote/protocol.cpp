#include "protocol.hpp"

#include <span>

namespace troupe::cluster::detail {

using persistence::byte_reader;
using persistence::byte_writer;

void write_string(byte_writer& w, std::string_view s) {
  w.write_varint(s.size());
  w.write_raw(std::as_bytes(std::span(s.data(), s.size())));
}

std::string read_string(byte_reader& r) {
  auto raw = r.read_raw(r.read_count());
  return {reinterpret_cast<const char*>(raw.data()), raw.size()};
}

void write_node_id(byte_writer& w, const node_id& n) {
  write_string(w, n.address.host);
  w.write_varint(n.address.port);
  w.write_fixed(n.incarnation, 8);
}

node_id read_node_id(byte_reader& r) {
  node_id n;
  n.address.host = read_string(r);
  auto port = r.read_varint();
  if (port > 65535) r.fail("port out of range");
  n.address.port = static_cast<std::uint16_t>(port);
  n.incarnation = r.read_fixed(8);
  return n;
}

void write_spec(byte_writer& w, const recipient_spec& s) {
  if (s.export_id != 0) {
    w.write_byte(std::byte{0});
    w.write_varint(s.export_id);
  } else {
    w.write_byte(std::byte{1});
    write_string(w, s.path);
  }
}

recipient_spec read_spec(byte_reader& r) {
  recipient_spec s;
  auto kind = r.read_byte();
  if (kind == std::byte{0}) {
    s.export_id = r.read_varint();
    if (s.export_id == 0) r.fail("export id 0");
  } else if (kind == std::byte{1}) {
    s.path = read_string(r);
  } else {
    r.fail("unknown recipient kind");
  }
  return s;
}

void write_ref(byte_writer& w, bool temporary, const node_id* owner, std::uint64_t export_id,
               std::string_view path) {
  const std::uint8_t flags =
      (owner == nullptr ? ref_on_sender : 0U) | (temporary ? ref_temporary : 0U);
  w.write_byte(static_cast<std::byte>(flags));
  if (owner != nullptr) write_node_id(w, *owner);
  w.write_varint(export_id);
  write_string(w, path);
}

wire_ref read_ref(byte_reader& r) {
  wire_ref ref;
  const auto flags = static_cast<std::uint8_t>(r.read_byte());
  if (flags == ref_empty) {
    ref.empty = true;
    return ref;
  }
  if ((flags & ~(ref_on_sender | ref_temporary)) != 0) r.fail("unknown actor ref flags");
  ref.temporary = (flags & ref_temporary) != 0;
  if ((flags & ref_on_sender) == 0) ref.owner = read_node_id(r);
  ref.export_id = r.read_varint();
  ref.path = read_string(r);
  if (ref.export_id == 0 && ref.path.empty()) r.fail("actor ref with neither export id nor path");
  return ref;
}

void write_handshake(byte_writer& w, const handshake& h) {
  write_string(w, h.cluster);
  w.write_varint(h.protocol);
  write_node_id(w, h.from);
  write_string(w, h.to.host);
  w.write_varint(h.to.port);
}

handshake read_handshake(byte_reader& r) {
  handshake h;
  h.cluster = read_string(r);
  h.protocol = r.read_varint();
  h.from = read_node_id(r);
  h.to.host = read_string(r);
  auto port = r.read_varint();
  if (port > 65535) r.fail("port out of range");
  h.to.port = static_cast<std::uint16_t>(port);
  return h;
}

}  // namespace troupe::cluster::detail
