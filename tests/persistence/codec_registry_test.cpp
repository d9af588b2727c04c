// The codec registry: manifests per type, variants written as their alternative, upcasting of
// older versions, and clear errors for unknown manifests and malformed payloads.
#include <troupe/persistence/errc.hpp>
#include <troupe/persistence/serialization/codec_registry.hpp>

#include <boost/describe/class.hpp>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <variant>

namespace {

namespace tp = troupe::persistence;
using tp::errc;

struct opened {
  std::string owner;
  friend bool operator==(const opened&, const opened&) = default;
};
BOOST_DESCRIBE_STRUCT(opened, (), (owner))

/// Version 2 of the deposit event added the currency.
struct deposited {
  std::int64_t amount = 0;
  std::string currency;
  friend bool operator==(const deposited&, const deposited&) = default;
};
BOOST_DESCRIBE_STRUCT(deposited, (), (amount, currency))

/// How version 1 stored a deposit: in whole units, as an unsigned number.
struct deposited_v1 {
  std::uint32_t units = 0;
};
BOOST_DESCRIBE_STRUCT(deposited_v1, (), (units))

using event = std::variant<opened, deposited>;

tp::codec_registry bank_registry() {
  tp::codec_registry reg;
  reg.add<opened>("bank.opened").add<deposited>("bank.deposited", 2);
  reg.add_upcast<deposited_v1, deposited>(1, [](deposited_v1 old) {
    return deposited{std::int64_t{old.units} * 100, "EUR"};
  });
  return reg;
}

errc error_of(const auto& fn) {
  try {
    fn();
  } catch (const tp::persistence_error& e) {
    return e.value();
  }
  return errc{};
}

TEST(CodecRegistry, WritesAVariantAsItsActiveAlternativesManifest) {
  auto reg = bank_registry();
  auto stored = reg.serialize(event{deposited{5, "USD"}});
  EXPECT_EQ(stored.manifest, (tp::manifest{"bank.deposited", 2}));
  EXPECT_EQ(reg.deserialize<event>(stored), (event{deposited{5, "USD"}}));
  EXPECT_EQ(reg.deserialize<deposited>(stored), (deposited{5, "USD"}));
}

TEST(CodecRegistry, UpcastsAnOlderVersionThroughTheRegisteredFunction) {
  auto reg = bank_registry();
  tp::serialized old{{"bank.deposited", 1}, tp::encode(deposited_v1{7})};
  EXPECT_EQ(reg.deserialize<event>(old), (event{deposited{700, "EUR"}}));
}

TEST(CodecRegistry, RefusesUnknownManifestsAndTypesThatDoNotFit) {
  auto reg = bank_registry();
  EXPECT_EQ(error_of([&] {
              (void)reg.deserialize<event>({{"bank.closed", 1}, {}});
            }),
            errc::unknown_manifest);
  EXPECT_EQ(error_of([&] {
              (void)reg.deserialize<event>({{"bank.deposited", 3}, {}});
            }),
            errc::unknown_manifest);
  auto stored = reg.serialize(opened{"ada"});
  EXPECT_EQ(error_of([&] { (void)reg.deserialize<deposited>(stored); }), errc::unknown_manifest);
  EXPECT_EQ(error_of([&] { (void)reg.serialize(deposited_v1{}); }), errc::unknown_manifest);
}

TEST(CodecRegistry, ReportsMalformedPayloadsAsDecodeErrors) {
  auto reg = bank_registry();
  tp::serialized broken{{"bank.opened", 1}, {std::byte{1}, std::byte{9}}};
  EXPECT_EQ(error_of([&] { (void)reg.deserialize<event>(broken); }), errc::decode_error);
}

TEST(CodecRegistry, RefusesDuplicateAndInvalidRegistrations) {
  tp::codec_registry reg;
  reg.add<opened>("bank.opened");
  EXPECT_EQ(error_of([&] { reg.add<opened>("bank.opened.again"); }), errc::invalid_request);
  EXPECT_EQ(error_of([&] { reg.add<deposited>("bank.opened"); }), errc::invalid_request);
  EXPECT_EQ(error_of([&] { reg.add<deposited_v1>("", 1); }), errc::invalid_request);
  EXPECT_EQ(error_of([&] {
              reg.add_upcast<deposited_v1, opened>(1, [](deposited_v1) { return opened{}; });
            }),
            errc::invalid_request);  // v1 is not older than opened's current v1
}

}  // namespace
