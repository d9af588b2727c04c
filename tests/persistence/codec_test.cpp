// The built-in codecs: round trips of scalars, containers, variants and nested described structs,
// the documented byte layout, and malformed input that must fail with errc::decode_error.
#include <troupe/persistence/errc.hpp>
#include <troupe/persistence/serialization/codec.hpp>

#include <boost/describe/class.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace {

namespace tp = troupe::persistence;
using tp::errc;

struct money {
  std::int64_t cents = 0;
  std::string currency;
  friend bool operator==(const money&, const money&) = default;
};
BOOST_DESCRIBE_STRUCT(money, (), (cents, currency))

enum class status : std::uint8_t { open, closed };

// Neither has a codec: an unscoped enum could decode to an invalid value, and a struct that is
// not described has no fields to walk.
enum unscoped { first, second };
struct undescribed {
  int x = 0;
};
static_assert(!tp::encodable<unscoped>);
static_assert(!tp::encodable<undescribed>);
static_assert(tp::encodable<std::vector<std::map<std::string, std::optional<status>>>>);

struct account {
  std::string owner;
  money balance;
  std::vector<money> history;
  std::optional<std::string> note;
  std::map<std::string, std::vector<double>> tags;
  std::variant<std::monostate, money, std::string> last;
  status state = status::open;
  bool frozen = false;
  float rate = 0;
  friend bool operator==(const account&, const account&) = default;
};
BOOST_DESCRIBE_STRUCT(account, (), (owner, balance, history, note, tags, last, state, frozen, rate))

struct tree {
  int value = 0;
  std::vector<tree> children;
  friend bool operator==(const tree&, const tree&) = default;
};
BOOST_DESCRIBE_STRUCT(tree, (), (value, children))

/// A type with its own codec, as a protobuf message would plug in.
class opaque_point {
 public:
  opaque_point() = default;
  opaque_point(int x, int y) : x_(x), y_(y) {}
  [[nodiscard]] std::string to_text() const {
    return std::to_string(x_) + "," + std::to_string(y_);
  }
  static opaque_point from_text(const std::string& s) {
    auto comma = s.find(',');
    return {std::stoi(s.substr(0, comma)), std::stoi(s.substr(comma + 1))};
  }
  friend bool operator==(const opaque_point&, const opaque_point&) = default;

 private:
  int x_ = 0;
  int y_ = 0;
};

template <class T>
T round_trip(const T& value) {
  return tp::decode<T>(tp::encode(value));
}

tp::bytes raw(std::initializer_list<int> values) {
  tp::bytes out;
  for (int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

template <class T>
void expect_decode_error(const tp::bytes& in) {
  try {
    (void)tp::decode<T>(in);
    FAIL() << "decoded malformed bytes";
  } catch (const tp::persistence_error& e) {
    EXPECT_EQ(e.value(), errc::decode_error) << e.what();
  }
}

}  // namespace

template <>
struct troupe::persistence::codec<opaque_point> {
  static void encode(byte_writer& w, const opaque_point& p) {
    codec<std::string>::encode(w, p.to_text());
  }
  static opaque_point decode(byte_reader& r) {
    auto text = codec<std::string>::decode(r);
    if (text.find(',') == std::string::npos) r.fail("point without a comma");
    return opaque_point::from_text(text);
  }
};

namespace {

TEST(Codec, RoundTripsScalarsAtTheirLimits) {
  EXPECT_EQ(round_trip(std::numeric_limits<std::uint64_t>::max()),
            std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(round_trip(std::numeric_limits<std::int64_t>::min()),
            std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(round_trip(std::int8_t{-128}), -128);
  EXPECT_EQ(round_trip(true), true);
  EXPECT_EQ(round_trip(-0.25), -0.25);
  EXPECT_EQ(round_trip(1.5F), 1.5F);
  EXPECT_EQ(round_trip(std::string("h\0llo", 5)), std::string("h\0llo", 5));
  EXPECT_EQ(round_trip(status::closed), status::closed);
}

TEST(Codec, RoundTripsVarintsOfEveryLengthWhereverTheyEnd) {
  // Early elements are read with ten bytes or more left (no per-byte checks), the last ones
  // near the end of the input (checked byte by byte): both give the same values.
  std::vector<std::uint64_t> values;
  for (int bits = 0; bits <= 64; bits += 7) {
    values.push_back(bits == 64 ? std::numeric_limits<std::uint64_t>::max()
                                : (std::uint64_t{1} << bits) | 1U);
  }
  for (std::size_t last = 0; last < values.size(); ++last) {
    std::vector<std::uint64_t> v(values.begin(), values.end());
    std::rotate(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(last), v.end());
    EXPECT_EQ(round_trip(v), v);
  }
  std::vector<std::uint64_t> mixed;  // every length in a random order
  std::uint64_t x = 0x9e3779b97f4a7c15ULL;
  for (int i = 0; i < 1000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    mixed.push_back(x >> (x % 64));
  }
  EXPECT_EQ(round_trip(mixed), mixed);
}

TEST(Codec, RoundTripsNestedDescribedStructs) {
  account a{"ada",
            {1050, "EUR"},
            {{1, "EUR"}, {-2, "USD"}},
            "vip",
            {{"x", {1.0, 2.5}}, {"y", {}}},
            money{7, "CHF"},
            status::closed,
            true,
            0.5F};
  EXPECT_EQ(round_trip(a), a);
  EXPECT_EQ(round_trip(account{}), account{});
  std::vector<std::optional<std::map<int, std::variant<int, std::string>>>> nested{
      std::nullopt, std::map<int, std::variant<int, std::string>>{{1, 2}, {3, "three"}}};
  EXPECT_EQ(round_trip(nested), nested);
}

TEST(Codec, RoundTripsRecursiveTypes) {
  tree t{1, {{2, {}}, {3, {{4, {}}}}}};
  EXPECT_EQ(round_trip(t), t);
}

TEST(Codec, UsesACustomCodecWhereOneIsSpecialised) {
  std::vector<opaque_point> points{{1, 2}, {-3, 4}};
  EXPECT_EQ(round_trip(points), points);
  expect_decode_error<opaque_point>(raw({1, 'x'}));
}

TEST(Codec, WritesTheDocumentedCompactLittleEndianLayout) {
  EXPECT_EQ(tp::encode(std::uint32_t{300}), raw({0xac, 0x02}));
  EXPECT_EQ(tp::encode(std::int32_t{-1}), raw({0x01}));
  EXPECT_EQ(tp::encode(std::int32_t{1}), raw({0x02}));
  EXPECT_EQ(tp::encode(1.0F), raw({0x00, 0x00, 0x80, 0x3f}));
  EXPECT_EQ(tp::encode(std::string("ab")), raw({2, 'a', 'b'}));
  EXPECT_EQ(tp::encode(money{-2, "X"}), raw({2, 0x03, 1, 'X'}));
  EXPECT_EQ(tp::encode(std::optional<bool>{}), raw({0}));
  EXPECT_EQ(tp::encode(std::variant<bool, std::uint8_t>{std::uint8_t{5}}), raw({1, 5}));
}

TEST(Codec, DecodesAStructWrittenWithFewerFieldsUsingDefaultsForTheRest) {
  // `money` as an older writer that knew only `cents` would have stored it.
  EXPECT_EQ(tp::decode<money>(raw({1, 0x04})), (money{2, ""}));
  expect_decode_error<money>(raw({3, 0x04, 0, 0}));
}

TEST(Codec, RejectsTruncatedInput) {
  auto full = tp::encode(
      account{"ada", {1, "EUR"}, {{2, "USD"}}, "n", {}, "last", status::open, true, 1.0F});
  for (std::size_t n = 0; n < full.size(); ++n) {
    expect_decode_error<account>(tp::bytes(full.begin(), full.begin() + n));
  }
}

TEST(Codec, RejectsTrailingBytes) { expect_decode_error<std::uint8_t>(raw({1, 2})); }

TEST(Codec, RejectsOutOfRangeValues) {
  expect_decode_error<std::uint8_t>(raw({0x80, 0x02}));  // 256
  expect_decode_error<std::int8_t>(raw({0x80, 0x02}));   // zigzag 128
  expect_decode_error<bool>(raw({2}));
  expect_decode_error<std::optional<int>>(raw({7}));
  expect_decode_error<std::variant<int, bool>>(raw({2, 0}));
  expect_decode_error<std::monostate>(raw({1}));
  // 11 continuation bytes, and a 10th byte above 1: neither fits 64 bits.
  expect_decode_error<std::uint64_t>(
      raw({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
  expect_decode_error<std::uint64_t>(
      raw({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}));
}

TEST(Codec, RejectsCountsLargerThanTheInputBeforeAllocating) {
  expect_decode_error<std::string>(raw({0xff, 0xff, 0xff, 0xff, 0x0f, 'a'}));
  expect_decode_error<std::vector<std::uint64_t>>(
      raw({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}));
}

TEST(Codec, RejectsDuplicateMapKeys) {
  expect_decode_error<std::map<std::uint8_t, bool>>(raw({2, 1, 0, 1, 1}));
}

TEST(Codec, RejectsNestingDeeperThanTheLimitWithoutExhaustingTheStack) {
  // tree{children: [tree{children: [...]}]}: 2 fields, value 0, one child, and so on.
  tp::bytes deep;
  for (int i = 0; i < 10000; ++i) {
    for (int b : {2, 0, 1}) deep.push_back(static_cast<std::byte>(b));
  }
  expect_decode_error<tree>(deep);
}

}  // namespace
