// Child names of regions, shards and entities: every id gets a valid actor name, and two different
// ids never get the same one (the escape is injective).
#include <troupe/core/actor.hpp>
#include <troupe/core/actor_system.hpp>
#include <troupe/sharding/entity_path.hpp>
#include <troupe/testkit/deterministic.hpp>
#include <troupe/testkit/test_seed.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {

using troupe::sharding::entity_child_name;
using troupe::sharding::region_name;
using troupe::sharding::shard_child_name;

/// The core's rule for a chosen actor name (src/core/actor_cell.cpp): not empty, not starting with
/// '$', not "." or "..", and only [A-Za-z0-9_-.@:+~].
bool is_valid_actor_name(std::string_view name) {
  const auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == '@' || c == ':' || c == '+' || c == '~';
  };
  return !name.empty() && name[0] != '$' && name != "." && name != ".." &&
         std::all_of(name.begin(), name.end(), allowed);
}

// -- examples -----------------------------------------------------------------------------------

TEST(EntityChildName, KeepsNameCharactersAsTheyAre) {
  EXPECT_EQ(entity_child_name("user-42"), "entity-user-42");
  EXPECT_EQ(entity_child_name("a_b.c@d:e+f"), "entity-a_b.c@d:e+f");
  EXPECT_EQ(entity_child_name("AZaz09"), "entity-AZaz09");
}

TEST(EntityChildName, EscapesASlashAsTildeAndFourHexDigits) {
  EXPECT_EQ(entity_child_name("user/42"), "entity-user~002F42");
}

TEST(EntityChildName, EscapesTheTildeItself) {
  EXPECT_EQ(entity_child_name("~"), "entity-~007E");
  EXPECT_EQ(entity_child_name("~007E"), "entity-~007E007E");
}

TEST(EntityChildName, WritesUppercaseHexDigits) {
  EXPECT_EQ(entity_child_name("a b"), "entity-a~0020b");
  EXPECT_EQ(entity_child_name(std::string_view("\x1f\x7f", 2)), "entity-~001F~007F");
}

TEST(EntityChildName, NamesEmptyAndBlankIds) {
  EXPECT_EQ(entity_child_name(""), "entity-");
  EXPECT_EQ(entity_child_name(" "), "entity-~0020");
  EXPECT_EQ(entity_child_name("\t\n"), "entity-~0009~000A");
  EXPECT_EQ(entity_child_name(std::string_view("\0", 1)), "entity-~0000");
  EXPECT_NE(entity_child_name(""), entity_child_name(" "));
}

TEST(EntityChildName, EscapesEachByteOfNonAsciiUtf8) {
  EXPECT_EQ(entity_child_name("caf\xC3\xA9"), "entity-caf~00C3~00A9");     // "café"
  EXPECT_EQ(entity_child_name("\xE2\x82\xAC"), "entity-~00E2~0082~00AC");  // "€"
  EXPECT_EQ(entity_child_name("\xFF"), "entity-~00FF");
}

TEST(EntityChildName, KeepsDotsThatWouldBeSpecialOnTheirOwn) {
  // "." and ".." are not valid actor names, but the prefix makes them valid.
  EXPECT_EQ(entity_child_name("."), "entity-.");
  EXPECT_EQ(entity_child_name(".."), "entity-..");
  EXPECT_EQ(entity_child_name("$a"), "entity-~0024a");
}

TEST(ShardChildName, IsShardDashDecimalNumber) {
  EXPECT_EQ(shard_child_name(0), "shard-0");
  EXPECT_EQ(shard_child_name(7), "shard-7");
  EXPECT_EQ(shard_child_name(4294967295U), "shard-4294967295");
}

TEST(RegionName, IsRegionDashEscapedTypeName) {
  EXPECT_EQ(region_name("cart"), "region-cart");
  EXPECT_EQ(region_name("shop/cart"), "region-shop~002Fcart");
  EXPECT_EQ(region_name("~"), "region-~007E");
}

TEST(EntityChildName, GivesNamesTheCoreAcceptsAsSiblings) {
  // The real check of validity and uniqueness: spawn them side by side under one parent.
  struct idle final : troupe::actor<int> {
    void receive(int&) override {}
  };
  troupe::testkit::deterministic_system test;
  const std::vector<std::string> ids = {"",
                                        " ",
                                        "~",
                                        "~007E",
                                        "user/42",
                                        "user~002F42",
                                        ".",
                                        "..",
                                        "$x",
                                        "caf\xC3\xA9",
                                        "\xFF",
                                        "/",
                                        "\x7F",
                                        "a b c",
                                        std::string("\0", 1)};
  for (const std::string& id : ids) {
    EXPECT_NO_THROW((void)test.system().spawn<idle>(entity_child_name(id))) << "id '" << id << "'";
  }
  EXPECT_NO_THROW((void)test.system().spawn<idle>(region_name("shop/cart")));
  EXPECT_NO_THROW((void)test.system().spawn<idle>(shard_child_name(63)));
  test.run();
}

TEST(EntityChildName, MapsEveryIdOfUpToTwoBytesToItsOwnValidName) {
  std::unordered_map<std::string, std::string> id_of_name;
  const auto check = [&](const std::string& id) {
    const std::string name = entity_child_name(id);
    ASSERT_TRUE(is_valid_actor_name(name)) << "name '" << name << "'";
    ASSERT_TRUE(id_of_name.try_emplace(name, id).second)
        << "two ids share the name '" << name << "'";
  };
  check("");
  for (int a = 0; a < 256; ++a) {
    check(std::string(1, static_cast<char>(a)));
    for (int b = 0; b < 256; ++b) check({static_cast<char>(a), static_cast<char>(b)});
  }
  EXPECT_EQ(id_of_name.size(), 1U + 256U + 256U * 256U);
}

// -- property -----------------------------------------------------------------------------------

TEST(EntityChildName, MapsDistinctRandomIdsToDistinctValidNames) {
  const std::uint64_t seed = troupe::testkit::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);

  // An alphabet that makes escapes look like plain text and the other way round: '~' and the hex
  // digits of escapes, '/', bytes that escape to the same digits ('0' is 0x30), high bytes.
  std::vector<char> alphabet = {'~', '~', '~', '/', '/', '0', '0', '0', '_', '-', '.', ' ', '\0'};
  for (char c = '0'; c <= '9'; ++c) alphabet.push_back(c);
  for (char c = 'A'; c <= 'F'; ++c) alphabet.push_back(c);
  for (const int b : {0x7E, 0x2F, 0x80, 0xA9, 0xC3, 0xE2, 0xFE, 0xFF}) {
    alphabet.push_back(static_cast<char>(b));
  }
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  // Short ids, so that many are equal or differ by one byte.
  std::uniform_int_distribution<std::size_t> length(0, 10);

  std::unordered_map<std::string, std::string> id_of_name;
  std::size_t distinct_ids = 0;
  for (int i = 0; i < 100'000; ++i) {
    std::string id(length(rng), '\0');
    for (char& c : id) c = alphabet[pick(rng)];
    const std::string name = entity_child_name(id);
    ASSERT_TRUE(is_valid_actor_name(name)) << "name '" << name << "'";
    const auto [it, inserted] = id_of_name.try_emplace(name, id);
    if (inserted) {
      ++distinct_ids;
    } else {
      ASSERT_EQ(it->second, id) << "two ids share the name '" << name << "'";
    }
  }
  EXPECT_GT(distinct_ids, 50'000U);  // the test did compare many different ids
}

}  // namespace
