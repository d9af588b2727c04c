#pragma once
/// Frames: how bytes on a stream divide into messages. Every frame has an 8-byte header
///
///   offset 0  magic      0x54 ('T')
///   offset 1  version    protocol version of this frame's layout (currently 1)
///   offset 2  kind       frame_kind
///   offset 3  flags      0 (reserved)
///   offset 4  length     payload bytes, uint32 little-endian, at most the configured maximum
///
/// followed by `length` payload bytes. A decoder refuses a wrong magic, an unknown version or
/// kind, a non-zero flags byte and an oversized length: the connection is then closed, since
/// nothing after a bad header can be trusted.

#include <troupe/cluster/transport.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace troupe::cluster::wire {

inline constexpr std::byte frame_magic{0x54};
inline constexpr std::uint8_t protocol_version = 1;
inline constexpr std::size_t frame_header_size = 8;
/// Default largest payload accepted: 4 MiB (config troupe.remote.max-frame-size).
inline constexpr std::size_t default_max_frame_size = 4U << 20U;

enum class frame_kind : std::uint8_t {
  handshake = 1,         // first frame on a new stream, from the connecting side
  handshake_accept = 2,  // the listener's answer, with its own identity
  handshake_refuse = 3,  // the listener's refusal, with the reason; then it closes
  heartbeat = 4,         // "still here"; answered with heartbeat_ack
  heartbeat_ack = 5,
  message = 6,  // a user message for an actor
  system = 7,   // watch, unwatch, terminated, undeliverable
};
inline constexpr std::uint8_t max_frame_kind = 7;

/// One decoded frame; `payload` points into the decoder's buffer and is valid only during the
/// callback.
struct frame_view {
  frame_kind kind;
  std::span<const std::byte> payload;
};

/// Appends a frame to `out`: writes a header, lets `fill` append the payload, then patches the
/// length. Throws cluster_error(errc::bad_frame) if the payload exceeds `max_payload`
/// (the frame is removed from `out` again).
void append_frame(byte_buffer& out, frame_kind kind, const std::function<void(byte_buffer&)>& fill,
                  std::size_t max_payload = default_max_frame_size);

/// Starts a frame in `out` and returns where it starts; append the payload, then end_frame.
std::size_t begin_frame(byte_buffer& out, frame_kind kind);
/// Patches the length of the frame begun at `start`. Throws cluster_error(errc::bad_frame) if
/// the payload exceeds `max_payload` (the frame is removed from `out` again).
void end_frame(byte_buffer& out, std::size_t start,
               std::size_t max_payload = default_max_frame_size);

/// Splits a byte stream into frames; keeps a partial frame until the rest arrives.
class frame_decoder {
 public:
  explicit frame_decoder(std::size_t max_payload = default_max_frame_size) noexcept
      : max_payload_(max_payload) {}

  /// Feeds the next bytes and calls `on_frame` for every complete frame, in order. Returns
  /// false after a malformed header; error() then says why and every later feed fails too.
  bool feed(std::span<const std::byte> bytes,
            const std::function<void(const frame_view&)>& on_frame);

  /// Why the stream was refused; empty while it is well-formed.
  [[nodiscard]] const std::string& error() const noexcept { return error_; }
  /// Bytes of a partial frame waiting for the rest.
  [[nodiscard]] std::size_t buffered() const noexcept { return pending_.size(); }

 private:
  /// Checks the header at `h`; on success sets `length` and returns true.
  bool check_header(const std::byte* h, std::uint32_t& length);

  std::size_t max_payload_;
  byte_buffer pending_;
  std::string error_;
};

}  // namespace troupe::cluster::wire
