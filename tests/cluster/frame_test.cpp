#include <troupe/cluster/errc.hpp>
#include <troupe/cluster/wire/frame.hpp>

#include <gtest/gtest.h>

#include <vector>

namespace troupe::cluster::wire {
namespace {

byte_buffer payload_of(std::string_view text) {
  byte_buffer b;
  for (char c : text) b.push_back(static_cast<std::byte>(c));
  return b;
}

byte_buffer frames_of(const std::vector<std::string>& payloads) {
  byte_buffer out;
  for (const auto& p : payloads) {
    append_frame(out, frame_kind::message, [&](byte_buffer& b) {
      auto bytes = payload_of(p);
      b.insert(b.end(), bytes.begin(), bytes.end());
    });
  }
  return out;
}

std::vector<std::string> decode_in_chunks(frame_decoder& d, const byte_buffer& in,
                                          std::size_t chunk) {
  std::vector<std::string> got;
  for (std::size_t at = 0; at < in.size(); at += chunk) {
    auto part = std::span<const std::byte>(in).subspan(at, std::min(chunk, in.size() - at));
    EXPECT_TRUE(d.feed(part, [&](const frame_view& f) {
      EXPECT_EQ(f.kind, frame_kind::message);
      got.emplace_back(reinterpret_cast<const char*>(f.payload.data()), f.payload.size());
    })) << d.error();
  }
  return got;
}

TEST(frame, round_trips_frames_split_at_every_chunk_size) {
  std::vector<std::string> payloads{"", "a", "hello", std::string(300, 'x'), ""};
  auto bytes = frames_of(payloads);
  for (std::size_t chunk = 1; chunk <= bytes.size(); ++chunk) {
    frame_decoder d;
    EXPECT_EQ(decode_in_chunks(d, bytes, chunk), payloads) << "chunk " << chunk;
    EXPECT_EQ(d.buffered(), 0U);
  }
}

TEST(frame, refuses_an_oversized_frame_before_buffering_it) {
  byte_buffer out;
  append_frame(out, frame_kind::message, [](byte_buffer& b) { b.resize(b.size() + 100); });
  frame_decoder d(99);
  EXPECT_FALSE(d.feed(std::span<const std::byte>(out).first(frame_header_size),
                      [](auto&) { ADD_FAILURE() << "no frame expected"; }));
  EXPECT_NE(d.error().find("exceeds the maximum of 99"), std::string::npos) << d.error();
  EXPECT_FALSE(d.feed(out, [](auto&) {}));
}

TEST(frame, append_refuses_a_payload_above_the_maximum_and_leaves_the_buffer_as_it_was) {
  byte_buffer out = frames_of({"keep"});
  auto before = out;
  try {
    append_frame(
        out, frame_kind::message, [](byte_buffer& b) { b.resize(b.size() + 11); }, 10);
    FAIL() << "expected cluster_error";
  } catch (const cluster_error& e) {
    EXPECT_EQ(e.value(), errc::bad_frame);
  }
  EXPECT_EQ(out, before);
}

TEST(frame, refuses_bad_magic_version_kind_and_flags) {
  auto good = frames_of({"x"});
  for (auto [offset, value] :
       std::vector<std::pair<std::size_t, int>>{{0, 0x55}, {1, 2}, {2, 0}, {2, 99}, {3, 1}}) {
    auto bad = good;
    bad[offset] = static_cast<std::byte>(value);
    frame_decoder d;
    EXPECT_FALSE(d.feed(bad, [](auto&) { ADD_FAILURE() << "no frame expected"; }));
    EXPECT_FALSE(d.error().empty());
  }
}

}  // namespace
}  // namespace troupe::cluster::wire
