// libFuzzer target for wire::frame_decoder: arbitrary bytes, fed in chunks whose sizes come from
// the input, with a small maximum payload. A crash, an over-read (ASan), undefined behaviour
// (UBSan) or a broken invariant (std::abort) is a finding. The invariants:
//   - every decoded frame has a known kind and a payload no larger than the maximum;
//   - once feed() fails it keeps failing, delivers nothing more and keeps its error;
//   - how the bytes are chunked changes nothing: frames, outcome, error and buffered bytes equal
//     those of one feed of the whole input;
//   - the decoded frames re-encode to exactly the bytes they came from.
// Built and run by run_fuzz.cmake; CMakeLists.txt beside it says how to run a longer pass.
#include <troupe/cluster/wire/frame.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace wire = troupe::cluster::wire;
using troupe::cluster::byte_buffer;

void require(bool invariant) {
  if (!invariant) std::abort();
}

struct outcome {
  std::vector<std::pair<wire::frame_kind, byte_buffer>> frames;
  bool ok = true;
  std::string error;
  std::size_t buffered = 0;
};

/// Feeds `in` to a fresh decoder in chunks of `sizes` (cycled; empty: one feed of everything).
outcome decode(std::span<const std::byte> in, std::size_t max_payload,
               const std::vector<std::size_t>& sizes) {
  wire::frame_decoder decoder(max_payload);
  outcome out;
  bool failed = false;
  auto on_frame = [&](const wire::frame_view& f) {
    require(!failed);
    const auto kind = static_cast<std::uint8_t>(f.kind);
    require(kind >= 1 && kind <= wire::max_frame_kind);
    require(f.payload.size() <= max_payload);
    out.frames.emplace_back(f.kind, byte_buffer(f.payload.begin(), f.payload.end()));
  };
  std::size_t at = 0;
  for (std::size_t i = 0; at < in.size() || i == 0; ++i) {
    const std::size_t size = sizes.empty() ? in.size() : sizes[i % sizes.size()];
    const auto chunk = in.subspan(at, std::min(size, in.size() - at));
    at += chunk.size();
    if (!decoder.feed(chunk, on_frame)) {
      failed = true;
      break;
    }
    require(decoder.error().empty());
    require(decoder.buffered() < wire::frame_header_size + max_payload);
  }
  if (failed) {
    out.ok = false;
    out.error = decoder.error();
    require(!out.error.empty());
    // Whatever comes after a bad header is refused too, and the reason stays the same.
    const auto frames = out.frames.size();
    require(!decoder.feed(in.subspan(at), on_frame));
    require(!decoder.feed(in, on_frame));
    require(!decoder.feed({}, on_frame));
    require(decoder.error() == out.error && out.frames.size() == frames);
  } else {
    out.buffered = decoder.buffered();
  }
  return out;
}

}  // namespace

// Input: [max payload % 65] [n % 17] [n chunk sizes, each byte + 1] [the stream...]
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t max_payload = data[0] % 65;
  const std::size_t chunk_count = std::min<std::size_t>(data[1] % 17, size - 2);
  std::vector<std::size_t> sizes;
  for (std::size_t i = 0; i < chunk_count; ++i) sizes.push_back(std::size_t{data[2 + i]} + 1);
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data) + 2 + chunk_count,
                                      size - 2 - chunk_count);

  const outcome chunked = decode(in, max_payload, sizes);
  const outcome whole = decode(in, max_payload, {});
  require(chunked.frames == whole.frames);
  require(chunked.ok == whole.ok && chunked.error == whole.error);
  require(chunked.buffered == whole.buffered);

  byte_buffer encoded;
  for (const auto& frame : whole.frames) {
    const auto& payload = frame.second;
    wire::append_frame(encoded, frame.first,
                       [&](byte_buffer& b) { b.insert(b.end(), payload.begin(), payload.end()); });
  }
  require(encoded.size() <= in.size());
  require(std::equal(encoded.begin(), encoded.end(), in.begin()));
  if (whole.ok) require(encoded.size() + whole.buffered == in.size());
  return 0;
}
