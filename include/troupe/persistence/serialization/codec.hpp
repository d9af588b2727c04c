#pragma once
/// Codecs: how one C++ type becomes bytes and back. `codec<T>` is the customisation point; the
/// types below get one without user code, and any other type plugs in its own by specialising
/// it (for example around protobuf's SerializeToString / ParseFromString):
///
///   template <> struct troupe::persistence::codec<my_type> {
///     static void encode(byte_writer& w, const my_type& v);
///     static my_type decode(byte_reader& r);  // throw via r.fail(...) on bad input
///   };
///
/// Format of the built-in codecs (primitives in wire.hpp), compact and little-endian:
///   bool                  one byte, 0 or 1 (anything else is an error)
///   unsigned integers     varint; signed integers zigzag varint; scoped enums as their
///                         underlying type
///   float, double         fixed32, fixed64 (IEEE-754 bits)
///   std::byte             one raw byte
///   std::string           varint byte count, then the bytes
///   std::vector<T>        varint element count, then the elements
///   std::map<K, V>        varint entry count, then key, value, key, value... (keys must differ)
///   std::optional<T>      byte 0 (empty) or 1 followed by the value
///   std::variant<Ts...>   varint alternative index, then the alternative
///   std::monostate        one byte 0
///   described struct      varint field count, then the fields in declaration order
///                         (BOOST_DESCRIBE_STRUCT; base classes are not encoded, so describe the
///                         fields of a derived struct yourself). A decoder accepts fewer fields
///                         than it declares (the missing trailing fields keep their default), so
///                         appending a field needs no new version; more fields is an error.
/// Every encoded value takes at least one byte, which lets a decoder reject any count larger than
/// the bytes left before it allocates. A top-level decode must consume every byte.

#include <troupe/persistence/serialization/wire.hpp>

#include <boost/describe/members.hpp>
#include <boost/describe/modifiers.hpp>
#include <boost/mp11/algorithm.hpp>

#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace troupe::persistence {

/// The codec of T: specialise it for a type the built-in codecs do not cover.
template <class T>
struct codec;

/// A type with a codec.
template <class T>
concept encodable = requires(byte_writer& w, byte_reader& r, const T& v) {
  codec<T>::encode(w, v);
  { codec<T>::decode(r) } -> std::same_as<T>;
};

/// A struct whose public fields are reflected with BOOST_DESCRIBE_STRUCT.
template <class T>
concept described_struct =
    std::is_class_v<T> && boost::describe::has_describe_members<T>::value && !std::is_union_v<T>;

// -- scalars -------------------------------------------------------------------

template <>
struct codec<bool> {
  static void encode(byte_writer& w, bool v) { w.write_byte(v ? std::byte{1} : std::byte{0}); }
  static bool decode(byte_reader& r) {
    auto b = r.read_byte();
    if (b != std::byte{0} && b != std::byte{1}) r.fail("bool is neither 0 nor 1");
    return b == std::byte{1};
  }
};

template <std::unsigned_integral T>
requires(!std::same_as<T, bool>) struct codec<T> {
  static void encode(byte_writer& w, T v) { w.write_varint(v); }
  static T decode(byte_reader& r) {
    auto v = r.read_varint();
    if (v > std::numeric_limits<T>::max()) r.fail("unsigned integer out of range");
    return static_cast<T>(v);
  }
};

template <std::signed_integral T>
struct codec<T> {
  static void encode(byte_writer& w, T v) { w.write_zigzag(v); }
  static T decode(byte_reader& r) {
    auto v = r.read_zigzag();
    if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) {
      r.fail("signed integer out of range");
    }
    return static_cast<T>(v);
  }
};

/// Scoped enums only: their underlying type is fixed, so every decoded value is a valid one
/// (an unscoped enum without a fixed type would make out-of-range values undefined).
template <class T>
requires(std::is_enum_v<T> &&
         !std::is_convertible_v<T, std::underlying_type_t<T>>) struct codec<T> {
  using underlying = std::underlying_type_t<T>;
  static void encode(byte_writer& w, T v) {
    codec<underlying>::encode(w, static_cast<underlying>(v));
  }
  static T decode(byte_reader& r) { return static_cast<T>(codec<underlying>::decode(r)); }
};

template <>
struct codec<float> {
  static void encode(byte_writer& w, float v) { w.write_fixed(std::bit_cast<std::uint32_t>(v), 4); }
  static float decode(byte_reader& r) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(r.read_fixed(4)));
  }
};

template <>
struct codec<double> {
  static void encode(byte_writer& w, double v) {
    w.write_fixed(std::bit_cast<std::uint64_t>(v), 8);
  }
  static double decode(byte_reader& r) { return std::bit_cast<double>(r.read_fixed(8)); }
};

template <>
struct codec<std::byte> {
  static void encode(byte_writer& w, std::byte v) { w.write_byte(v); }
  static std::byte decode(byte_reader& r) { return r.read_byte(); }
};

template <>
struct codec<std::monostate> {
  static void encode(byte_writer& w, std::monostate /*unused*/) { w.write_byte(std::byte{0}); }
  static std::monostate decode(byte_reader& r) {
    if (r.read_byte() != std::byte{0}) r.fail("monostate is not 0");
    return {};
  }
};

template <>
struct codec<std::string> {
  static void encode(byte_writer& w, const std::string& v) {
    w.write_varint(v.size());
    w.write_raw(std::as_bytes(std::span(v.data(), v.size())));
  }
  static std::string decode(byte_reader& r) {
    auto raw = r.read_raw(r.read_count());
    return {reinterpret_cast<const char*>(raw.data()), raw.size()};
  }
};

// -- containers ------------------------------------------------------------------

template <class T, class Alloc>
struct codec<std::vector<T, Alloc>> {
  static void encode(byte_writer& w, const std::vector<T, Alloc>& v) {
    w.write_varint(v.size());
    for (const auto& e : v) codec<T>::encode(w, e);
  }
  static std::vector<T, Alloc> decode(byte_reader& r) {
    byte_reader::nesting level(r);
    std::size_t n = r.read_count();
    std::vector<T, Alloc> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) out.push_back(codec<T>::decode(r));
    return out;
  }
};

/// Raw bytes: the same format as any vector (a count, then each byte), written in one go.
template <>
struct codec<std::vector<std::byte>> {
  static void encode(byte_writer& w, const std::vector<std::byte>& v) {
    w.write_varint(v.size());
    w.write_raw(v);
  }
  static std::vector<std::byte> decode(byte_reader& r) {
    auto raw = r.read_raw(r.read_count());
    return {raw.begin(), raw.end()};
  }
};

template <class K, class V, class Compare, class Alloc>
struct codec<std::map<K, V, Compare, Alloc>> {
  static void encode(byte_writer& w, const std::map<K, V, Compare, Alloc>& m) {
    w.write_varint(m.size());
    for (const auto& [k, v] : m) {
      codec<K>::encode(w, k);
      codec<V>::encode(w, v);
    }
  }
  static std::map<K, V, Compare, Alloc> decode(byte_reader& r) {
    byte_reader::nesting level(r);
    std::size_t n = r.read_count();
    std::map<K, V, Compare, Alloc> out;
    for (std::size_t i = 0; i < n; ++i) {
      K key = codec<K>::decode(r);
      V value = codec<V>::decode(r);
      if (!out.emplace(std::move(key), std::move(value)).second) r.fail("duplicate map key");
    }
    return out;
  }
};

template <class T>
struct codec<std::optional<T>> {
  static void encode(byte_writer& w, const std::optional<T>& v) {
    w.write_byte(v ? std::byte{1} : std::byte{0});
    if (v) codec<T>::encode(w, *v);
  }
  static std::optional<T> decode(byte_reader& r) {
    byte_reader::nesting level(r);
    auto tag = r.read_byte();
    if (tag == std::byte{0}) return std::nullopt;
    if (tag != std::byte{1}) r.fail("optional tag is neither 0 nor 1");
    return codec<T>::decode(r);
  }
};

template <class... Ts>
struct codec<std::variant<Ts...>> {
  using variant = std::variant<Ts...>;
  static void encode(byte_writer& w, const variant& v) {
    if (v.valueless_by_exception()) {
      throw persistence_error(errc::invalid_request, "cannot encode a valueless variant");
    }
    w.write_varint(v.index());
    std::visit([&w](const auto& alt) { codec<std::decay_t<decltype(alt)>>::encode(w, alt); }, v);
  }
  static variant decode(byte_reader& r) {
    byte_reader::nesting level(r);
    auto index = r.read_varint();
    if (index >= sizeof...(Ts)) r.fail("variant index " + std::to_string(index) + " out of range");
    return boost::mp11::mp_with_index<sizeof...(Ts)>(
        static_cast<std::size_t>(index), [&r](auto i) -> variant {
          using alt = std::variant_alternative_t<decltype(i)::value, variant>;
          return variant(std::in_place_index<decltype(i)::value>, codec<alt>::decode(r));
        });
  }
};

// -- described structs -------------------------------------------------------------

template <described_struct T>
struct codec<T> {
  using fields = boost::describe::describe_members<T, boost::describe::mod_public>;

  static void encode(byte_writer& w, const T& v) {
    w.write_varint(boost::mp11::mp_size<fields>::value);
    boost::mp11::mp_for_each<fields>([&](auto field) {
      using field_type = std::remove_cvref_t<decltype(v.*field.pointer)>;
      codec<field_type>::encode(w, v.*field.pointer);
    });
  }

  static T decode(byte_reader& r) {
    byte_reader::nesting level(r);
    auto present = r.read_varint();
    if (present > boost::mp11::mp_size<fields>::value) {
      r.fail("struct has " + std::to_string(present) + " fields, the type declares " +
             std::to_string(boost::mp11::mp_size<fields>::value));
    }
    T out{};
    std::size_t index = 0;
    boost::mp11::mp_for_each<fields>([&](auto field) {
      if (index++ >= present) return;
      using field_type = std::remove_cvref_t<decltype(out.*field.pointer)>;
      out.*field.pointer = codec<field_type>::decode(r);
    });
    return out;
  }
};

// -- whole values ------------------------------------------------------------------

/// The bytes of a value.
template <encodable T>
[[nodiscard]] bytes encode(const T& value) {
  bytes out;
  byte_writer w(out);
  codec<T>::encode(w, value);
  return out;
}

/// The value in `in`; throws persistence_error(errc::decode_error) unless `in` holds exactly one
/// well-formed T.
template <encodable T>
[[nodiscard]] T decode(std::span<const std::byte> in) {
  byte_reader r(in);
  T value = codec<T>::decode(r);
  r.expect_end();
  return value;
}

}  // namespace troupe::persistence
