// libFuzzer target for the codec's decoder: arbitrary bytes decoded as several nested types must
// either decode or fail with persistence_error; any other exception, a crash, an over-read (ASan)
// or undefined behaviour (UBSan) is a finding. Whatever decodes must re-encode to a value that
// decodes equal (the format round-trips). Built and run by run_fuzz.cmake (see
// docs/persistence.md for longer runs).
#include <troupe/persistence/errc.hpp>
#include <troupe/persistence/serialization/codec.hpp>
#include <troupe/persistence/serialization/codec_registry.hpp>

#include <boost/describe/class.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace {

namespace tp = troupe::persistence;

struct line {
  std::string sku;
  std::uint32_t quantity = 0;
  double price = 0;
  friend bool operator==(const line&, const line&) = default;
};
BOOST_DESCRIBE_STRUCT(line, (), (sku, quantity, price))

enum class cart_state : std::int16_t { open, checked_out };

struct cart {
  std::string owner;
  std::vector<line> lines;
  std::map<std::string, std::optional<std::int64_t>> coupons;
  std::variant<std::monostate, bool, std::string, line> last;
  cart_state state = cart_state::open;
  float discount = 0;
  friend bool operator==(const cart&, const cart&) = default;
};
BOOST_DESCRIBE_STRUCT(cart, (), (owner, lines, coupons, last, state, discount))

struct node {
  std::int32_t value = 0;
  std::vector<node> children;
  friend bool operator==(const node&, const node&) = default;
};
BOOST_DESCRIBE_STRUCT(node, (), (value, children))

using event = std::variant<line, cart>;

/// NaN never equals itself: compare floating point through its bytes instead.
template <class T>
bool same_encoding(const T& a, const T& b) {
  return tp::encode(a) == tp::encode(b);
}

template <class T>
void decode_and_round_trip(std::span<const std::byte> in) {
  T value;
  try {
    value = tp::decode<T>(in);
  } catch (const tp::persistence_error& e) {
    if (e.value() != tp::errc::decode_error) std::abort();
    return;
  }
  if (!same_encoding(tp::decode<T>(tp::encode(value)), value)) std::abort();
}

const tp::codec_registry& registry() {
  static const tp::codec_registry reg = [] {
    tp::codec_registry r;
    r.add<line>("shop.line").add<cart>("shop.cart", 2);
    r.add_upcast<node, cart>(1, [](const node& n) { return cart{std::to_string(n.value)}; });
    return r;
  }();
  return reg;
}

void deserialize(std::uint8_t selector, std::span<const std::byte> in) {
  static const tp::manifest manifests[] = {
      {"shop.line", 1}, {"shop.cart", 2}, {"shop.cart", 1}, {"shop.unknown", 1}};
  tp::serialized stored{manifests[selector % 4], tp::bytes(in.begin(), in.end())};
  try {
    (void)registry().deserialize<event>(stored);
  } catch (const tp::persistence_error& e) {
    if (e.value() != tp::errc::decode_error && e.value() != tp::errc::unknown_manifest) {
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  auto selector = data[0];
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data + 1), size - 1);
  switch (selector % 6) {
    case 0:
      decode_and_round_trip<cart>(in);
      break;
    case 1:
      decode_and_round_trip<node>(in);
      break;
    case 2:
      decode_and_round_trip<std::map<std::string, std::vector<std::optional<std::int64_t>>>>(in);
      break;
    case 3:
      decode_and_round_trip<event>(in);
      break;
    case 4:
      decode_and_round_trip<std::vector<std::variant<std::uint8_t, std::int64_t, double, bool>>>(
          in);
      break;
    default:
      deserialize(static_cast<std::uint8_t>(selector / 6), in);
      break;
  }
  return 0;
}
