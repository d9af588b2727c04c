#include <troupe/cluster/errc.hpp>
#include <troupe/cluster/wire/frame.hpp>

#include <cstring>

namespace troupe::cluster::wire {

std::size_t begin_frame(byte_buffer& out, frame_kind kind) {
  const std::size_t start = out.size();
  out.resize(start + frame_header_size);
  out[start] = frame_magic;
  out[start + 1] = std::byte{protocol_version};
  out[start + 2] = static_cast<std::byte>(kind);
  out[start + 3] = std::byte{0};
  return start;
}

void end_frame(byte_buffer& out, std::size_t start, std::size_t max_payload) {
  const std::size_t length = out.size() - start - frame_header_size;
  if (length > max_payload || length > UINT32_MAX) {
    out.resize(start);
    throw cluster_error(errc::bad_frame, "frame payload of " + std::to_string(length) +
                                             " bytes exceeds the maximum of " +
                                             std::to_string(max_payload));
  }
  for (std::size_t i = 0; i < 4; ++i) {
    out[start + 4 + i] = static_cast<std::byte>((length >> (8 * i)) & 0xff);
  }
}

void append_frame(byte_buffer& out, frame_kind kind, const std::function<void(byte_buffer&)>& fill,
                  std::size_t max_payload) {
  const std::size_t start = begin_frame(out, kind);
  try {
    fill(out);
  } catch (...) {
    out.resize(start);
    throw;
  }
  end_frame(out, start, max_payload);
}

bool frame_decoder::check_header(const std::byte* h, std::uint32_t& length) {
  if (h[0] != frame_magic) {
    error_ = "bad frame magic";
  } else if (h[1] != std::byte{protocol_version}) {
    error_ = "unsupported frame version " + std::to_string(static_cast<unsigned>(h[1]));
  } else if (h[2] == std::byte{0} || static_cast<std::uint8_t>(h[2]) > max_frame_kind) {
    error_ = "unknown frame kind " + std::to_string(static_cast<unsigned>(h[2]));
  } else if (h[3] != std::byte{0}) {
    error_ = "reserved frame flags are set";
  } else {
    length = 0;
    for (int i = 0; i < 4; ++i) length |= static_cast<std::uint32_t>(h[4 + i]) << (8 * i);
    if (length <= max_payload_) return true;
    error_ = "frame of " + std::to_string(length) + " bytes exceeds the maximum of " +
             std::to_string(max_payload_);
  }
  return false;
}

bool frame_decoder::feed(std::span<const std::byte> bytes,
                         const std::function<void(const frame_view&)>& on_frame) {
  if (!error_.empty()) return false;
  // Complete a partial frame first, copying only what it still needs.
  auto take_into_pending = [&](std::size_t want) {
    std::size_t take = std::min(want - pending_.size(), bytes.size());
    pending_.insert(pending_.end(), bytes.begin(),
                    bytes.begin() + static_cast<std::ptrdiff_t>(take));
    bytes = bytes.subspan(take);
    return pending_.size() == want;
  };
  if (!pending_.empty()) {
    if (pending_.size() < frame_header_size && !take_into_pending(frame_header_size)) return true;
    std::uint32_t length = 0;
    if (!check_header(pending_.data(), length)) return false;
    if (!take_into_pending(frame_header_size + length)) return true;
    on_frame(frame_view{static_cast<frame_kind>(pending_[2]),
                        std::span<const std::byte>(pending_).subspan(frame_header_size)});
    pending_.clear();
  }
  // Whole frames straight from the input, without copying.
  while (bytes.size() >= frame_header_size) {
    std::uint32_t length = 0;
    if (!check_header(bytes.data(), length)) return false;
    if (bytes.size() < frame_header_size + length) break;
    on_frame(
        frame_view{static_cast<frame_kind>(bytes[2]), bytes.subspan(frame_header_size, length)});
    bytes = bytes.subspan(frame_header_size + length);
  }
  pending_.assign(bytes.begin(), bytes.end());
  return true;
}

}  // namespace troupe::cluster::wire
