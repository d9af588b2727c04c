#pragma once
/// The byte-level primitives of the codec format: a writer that appends and a reader that
/// consumes with bounds checks. Every read checks what is left, so malformed input raises
/// errc::decode_error (with the byte offset) and never reads past the end.
///
/// Primitives (all little-endian):
///   varint    unsigned LEB128: 7 bits per byte, low groups first, high bit = more follows;
///             at most 10 bytes for 64 bits; a value too large for the target type is an error.
///   zigzag    signed integers as varint((n << 1) ^ (n >> 63)), so small negatives stay short.
///   fixed32/64  IEEE-754 float/double bit patterns, 4 or 8 bytes.
///   byte      one raw byte.

#include <troupe/persistence/errc.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::persistence {

/// Encoded bytes.
using bytes = std::vector<std::byte>;

/// Appends encoded primitives to a byte buffer.
class byte_writer {
 public:
  explicit byte_writer(bytes& out) noexcept : out_(out) {}

  void write_byte(std::byte b) { out_.push_back(b); }

  void write_varint(std::uint64_t v) {
    if (v < 0x80) {
      out_.push_back(static_cast<std::byte>(v));
      return;
    }
    // Built on the stack and appended at once: one capacity check instead of one per byte.
    std::byte group[10];
    std::size_t n = 0;
    while (v >= 0x80) {
      group[n++] = static_cast<std::byte>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    group[n++] = static_cast<std::byte>(v);
    write_raw({group, n});
  }

  void write_zigzag(std::int64_t v) {
    write_varint((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
  }

  void write_fixed(std::uint64_t v, int width) {
    for (int i = 0; i < width; ++i) out_.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
  }

  void write_raw(std::span<const std::byte> data) {
    if (data.empty()) return;
    // resize + memcpy rather than insert(): GCC 12 at -O2 warns falsely (-Wstringop-overread)
    // about vector<std::byte>::insert.
    auto at = out_.size();
    out_.resize(at + data.size());
    std::memcpy(out_.data() + at, data.data(), data.size());
  }

 private:
  bytes& out_;
};

/// Consumes encoded primitives from a byte span; every read is bounds-checked.
class byte_reader {
 public:
  /// Nesting (structs, containers, variants, optionals) deeper than this is refused, so a
  /// recursive type fed hostile bytes cannot exhaust the stack.
  static constexpr int max_depth = 64;

  explicit byte_reader(std::span<const std::byte> in) noexcept : in_(in) {}

  [[nodiscard]] std::size_t remaining() const noexcept { return in_.size() - pos_; }
  [[nodiscard]] std::size_t position() const noexcept { return pos_; }

  std::byte read_byte() {
    require(1, "a byte");
    return in_[pos_++];
  }

  std::uint64_t read_varint() {
    // Most varints (lengths, slots, small numbers) are one byte: no loop for those.
    if (pos_ < in_.size() && static_cast<std::uint8_t>(in_[pos_]) < 0x80) {
      return static_cast<std::uint8_t>(in_[pos_++]);
    }
    return read_long_varint();
  }

  std::int64_t read_zigzag() {
    std::uint64_t v = read_varint();
    return static_cast<std::int64_t>((v >> 1) ^ (~(v & 1) + 1));
  }

  std::uint64_t read_fixed(int width) {
    require(static_cast<std::size_t>(width), "a fixed-width number");
    std::uint64_t v = 0;
    for (int i = 0; i < width; ++i) v |= static_cast<std::uint64_t>(in_[pos_++]) << (8 * i);
    return v;
  }

  /// A count of following items (elements, bytes, entries). Each item takes at least one byte,
  /// so a count above the bytes left is malformed; checking it first bounds every allocation
  /// by the input's size.
  std::size_t read_count() {
    std::uint64_t n = read_varint();
    if (n > remaining()) fail("count " + std::to_string(n) + " exceeds the bytes left");
    return static_cast<std::size_t>(n);
  }

  std::span<const std::byte> read_raw(std::size_t n) {
    require(n, "raw bytes");
    auto s = in_.subspan(pos_, n);
    pos_ += n;
    return s;
  }

  /// Fails unless every byte was consumed.
  void expect_end() const {
    if (remaining() != 0) fail(std::to_string(remaining()) + " trailing bytes");
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw persistence_error(errc::decode_error,
                            "decode error at byte " + std::to_string(pos_) + ": " + why);
  }

  /// Counts one level of nesting for as long as it lives.
  class nesting {
   public:
    explicit nesting(byte_reader& r) : r_(r) {
      if (r_.depth_ >= max_depth) r_.fail("nesting deeper than " + std::to_string(max_depth));
      ++r_.depth_;
    }
    ~nesting() { --r_.depth_; }
    nesting(const nesting&) = delete;
    nesting& operator=(const nesting&) = delete;

   private:
    byte_reader& r_;
  };

 private:
  /// The 7-bit groups of up to eight varint bytes (little-endian in `word`) as one number.
  static std::uint64_t gather_groups(std::uint64_t word) noexcept {
    word &= 0x7f7f7f7f7f7f7f7fULL;
    word = (word & 0x007f007f007f007fULL) | ((word & 0x7f007f007f007f00ULL) >> 1);
    word = (word & 0x00003fff00003fffULL) | ((word & 0x3fff00003fff0000ULL) >> 2);
    return (word & 0x000000000fffffffULL) | ((word & 0x0fffffff00000000ULL) >> 4);
  }

  std::uint64_t read_long_varint() {
    // With a whole varint's worth of bytes left, its first eight bytes are read as one word:
    // epochs and runs (lease ids) take up to ten bytes, and a delivery carries several.
    constexpr std::size_t longest = 10;
    if (std::endian::native == std::endian::little && remaining() >= longest) {
      const std::byte* p = in_.data() + pos_;
      std::uint64_t word = 0;
      std::memcpy(&word, p, sizeof word);
      constexpr std::uint64_t high_bits = 0x8080808080808080ULL;
      if (const std::uint64_t ends = ~word & high_bits; ends != 0) {
        const auto length = static_cast<std::size_t>(std::countr_zero(ends) / 8 + 1);
        if (length < sizeof word) word &= (std::uint64_t{1} << (8 * length)) - 1;
        pos_ += length;
        return gather_groups(word);
      }
      std::uint64_t value = gather_groups(word);
      const auto ninth = static_cast<std::uint64_t>(p[8]);
      value |= (ninth & 0x7f) << 56;
      if ((ninth & 0x80) == 0) {
        pos_ += 9;
        return value;
      }
      const auto tenth = static_cast<std::uint64_t>(p[9]);
      if (tenth > 1) fail("varint overflows 64 bits");
      pos_ += longest;
      return value | (tenth << 63);
    }
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      auto b = static_cast<std::uint64_t>(read_byte());
      if (shift == 63 && b > 1) fail("varint overflows 64 bits");
      value |= (b & 0x7f) << shift;
      if ((b & 0x80) == 0) return value;
    }
    fail("varint longer than 10 bytes");
  }

  void require(std::size_t n, const char* what) const {
    if (n > remaining()) fail(std::string("truncated input, expected ") + what);
  }

  std::span<const std::byte> in_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace troupe::persistence
