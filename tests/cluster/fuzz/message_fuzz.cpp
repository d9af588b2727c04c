// libFuzzer target for the inbound message decoding (src/cluster/remote/message_reader.hpp): a
// stream of message frames read through one stream's slot tables (recipient and manifest slot
// definitions and uses, one-off recipients, sender refs), then each payload decoded as a type
// chosen by its manifest slot, some of them holding refs. Bytes either read or fail with
// persistence_error; any other exception, a crash, an over-read (ASan), undefined behaviour
// (UBSan) or a broken invariant (std::abort) is a finding. The invariants:
//   - a frame defines at most one recipient and one manifest slot, also when it fails;
//   - the slots a frame names exist; its payload is the tail of its bytes;
//   - what reads re-encodes to bytes that read the same through the tables as they were before.
// Built and run by run_fuzz.cmake (tests/fuzz/fuzz_tests.cmake says how to run a longer pass).
#include <troupe/persistence/errc.hpp>
#include <troupe/persistence/serialization/codec.hpp>

#include "cluster/remote/message_reader.hpp"

#include <boost/describe/class.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace {

namespace tp = troupe::persistence;
namespace cd = troupe::cluster::detail;

void require(bool invariant) {
  if (!invariant) std::abort();
}

/// A ref inside a payload, read and written as the remoting's ref codec does.
struct payload_ref {
  cd::wire_ref ref{.empty = true};  // a field left out decodes as the empty ref, as actor_ref
};

bool same(const cd::wire_ref& a, const cd::wire_ref& b) {
  return a.empty == b.empty && a.temporary == b.temporary && a.owner == b.owner &&
         a.export_id == b.export_id && a.path == b.path;
}

void write_ref(tp::byte_writer& w, const cd::wire_ref& r) {
  if (r.empty) {
    w.write_byte(std::byte{cd::ref_empty});
    return;
  }
  cd::write_ref(w, r.temporary, r.owner ? &*r.owner : nullptr, r.export_id, r.path);
}

}  // namespace

template <>
struct troupe::persistence::codec<payload_ref> {
  static void encode(byte_writer& w, const payload_ref& v) { write_ref(w, v.ref); }
  static payload_ref decode(byte_reader& r) { return {cd::read_ref(r)}; }
};

namespace {

bool operator==(const payload_ref& a, const payload_ref& b) { return same(a.ref, b.ref); }

struct request {
  std::string text;
  payload_ref reply_to;
  std::vector<std::optional<payload_ref>> copies;
  friend bool operator==(const request&, const request&) = default;
};
BOOST_DESCRIBE_STRUCT(request, (), (text, reply_to, copies))

using command = std::variant<std::monostate, std::uint64_t, std::string, request>;

/// Decodes a payload as T; whatever decodes must re-encode to bytes that decode equal.
template <class T>
void decode_payload(std::span<const std::byte> payload) {
  T value;
  try {
    value = tp::decode<T>(payload);
  } catch (const tp::persistence_error&) {
    return;
  }
  const auto again = tp::encode(value);
  require(tp::decode<T>(again) == value);
}

bool same(const cd::recipient_spec& a, const cd::recipient_spec& b) {
  return a.export_id == b.export_id && a.path == b.path;
}

/// The header `h`, read by a reader whose tables were `before`, written back.
tp::bytes reencode(const cd::message_reader& before, const cd::message_reader& after,
                   const cd::message_reader::header& h) {
  tp::bytes out;
  tp::byte_writer w(out);
  if (h.recipient_slot == 0) {
    w.write_varint(0);
    cd::write_spec(w, h.one_off);
  } else if (h.recipient_slot > before.recipients()) {
    w.write_varint((std::uint64_t{h.recipient_slot} << 1U) | 1U);
    cd::write_spec(w, after.recipient(h.recipient_slot));
  } else {
    w.write_varint(std::uint64_t{h.recipient_slot} << 1U);
  }
  if (h.manifest_slot > before.manifests()) {
    const auto& m = after.manifest(h.manifest_slot);
    w.write_varint((std::uint64_t{h.manifest_slot} << 1U) | 1U);
    cd::write_string(w, m.type_name);
    w.write_varint(m.version);
  } else {
    w.write_varint(std::uint64_t{h.manifest_slot} << 1U);
  }
  if (h.sender) {
    w.write_byte(std::byte{1});
    write_ref(w, *h.sender);
  } else {
    w.write_byte(std::byte{0});
  }
  w.write_raw(h.payload);
  return out;
}

void check_frame(cd::message_reader& reader, std::span<const std::byte> frame) {
  const cd::message_reader before = reader;
  cd::message_reader::header h;
  tp::byte_reader r(frame);
  try {
    reader.read(r, h);
  } catch (const tp::persistence_error&) {
    require(reader.recipients() <= before.recipients() + 1);
    require(reader.manifests() <= before.manifests() + 1);
    if (h.has_recipient && h.recipient_slot != 0) require(h.recipient_slot <= reader.recipients());
    return;
  }
  require(reader.recipients() <= before.recipients() + 1);
  require(reader.manifests() <= before.manifests() + 1);
  require(h.has_recipient && h.recipient_slot <= reader.recipients());
  require(h.manifest_slot >= 1 && h.manifest_slot <= reader.manifests());
  require(r.remaining() == 0);
  require(h.payload.size() <= frame.size());
  require(h.payload.data() + h.payload.size() == frame.data() + frame.size());
  (void)reader.describe_recipient(h);
  (void)cd::message_reader::describe(reader.manifest(h.manifest_slot));

  // Written back and read through the tables as they were, the frame reads the same.
  const auto bytes = reencode(before, reader, h);
  cd::message_reader replay = before;
  cd::message_reader::header h2;
  tp::byte_reader r2(bytes);
  replay.read(r2, h2);
  require(h2.recipient_slot == h.recipient_slot && same(h2.one_off, h.one_off));
  require(h2.manifest_slot == h.manifest_slot);
  require(h2.sender.has_value() == h.sender.has_value());
  if (h.sender) require(same(*h2.sender, *h.sender));
  require(std::equal(h2.payload.begin(), h2.payload.end(), h.payload.begin(), h.payload.end()));
  require(replay.recipients() == reader.recipients() && replay.manifests() == reader.manifests());

  switch (h.manifest_slot % 3) {
    case 0:
      decode_payload<command>(h.payload);
      break;
    case 1:
      decode_payload<request>(h.payload);
      break;
    default:
      decode_payload<std::vector<payload_ref>>(h.payload);
      break;
  }
}

}  // namespace

// Input: frames, each [length byte][length bytes], read in order by one reader (one stream).
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  cd::message_reader reader;
  std::size_t at = 0;
  while (at < in.size()) {
    const std::size_t length =
        std::min<std::size_t>(std::to_integer<std::size_t>(in[at]), in.size() - at - 1);
    check_frame(reader, in.subspan(at + 1, length));
    at += 1 + length;
  }
  return 0;
}
