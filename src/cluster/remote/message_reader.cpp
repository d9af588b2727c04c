#include "message_reader.hpp"

namespace troupe::cluster::detail {

using persistence::byte_reader;

void message_reader::read(byte_reader& r, header& h) {
  const auto v = r.read_varint();
  if (v == 0) {
    h.one_off = read_spec(r);
  } else {
    const auto slot = v >> 1U;
    if ((v & 1U) != 0) {
      if (slot != recipients_.size() + 1) out_of_step(r, "recipient slot out of order");
      if (slot > max_slots) r.fail("more than " + std::to_string(max_slots) + " recipient slots");
      recipients_.push_back(read_spec(r));
    } else if (slot == 0 || slot > recipients_.size()) {
      out_of_step(r, "unknown recipient slot");
    }
    h.recipient_slot = static_cast<std::size_t>(slot);
  }
  h.has_recipient = true;

  const auto m = r.read_varint();
  const auto mslot = m >> 1U;
  if ((m & 1U) != 0) {
    if (mslot != manifests_.size() + 1) out_of_step(r, "manifest slot out of order");
    if (mslot > max_slots) r.fail("more than " + std::to_string(max_slots) + " manifest slots");
    manifest_name name;
    name.type_name = read_string(r);
    const auto version = r.read_varint();
    if (version > UINT32_MAX) r.fail("manifest version out of range");
    name.version = static_cast<std::uint32_t>(version);
    manifests_.push_back(std::move(name));
  } else if (mslot == 0 || mslot > manifests_.size()) {
    out_of_step(r, "unknown manifest slot");
  }
  h.manifest_slot = static_cast<std::size_t>(mslot);

  const auto has_sender = r.read_byte();
  if (has_sender == std::byte{1}) {
    h.sender = read_ref(r);
  } else if (has_sender != std::byte{0}) {
    r.fail("bad sender flag");
  }
  h.payload = r.read_raw(r.remaining());
}

void message_reader::out_of_step(const byte_reader& r, const std::string& why) {
  out_of_step_ = true;
  r.fail(why);
}

std::string message_reader::describe(const recipient_spec& spec) {
  return spec.export_id != 0 ? "export #" + std::to_string(spec.export_id) : spec.path;
}

std::string message_reader::describe(const manifest_name& m) {
  return "'" + m.type_name + "' v" + std::to_string(m.version);
}

std::string message_reader::describe_recipient(const header& h) const {
  return describe(h.recipient_slot == 0 ? h.one_off : recipient(h.recipient_slot));
}

}  // namespace troupe::cluster::detail
