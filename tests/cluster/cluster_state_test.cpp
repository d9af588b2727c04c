// The cluster state decoded from the keys under P/ (cluster_state_reader.hpp): members, each
// type's coordinator (the lowest election key), regions with their shard counts, and where each
// allocated shard lives, including an owner whose member key is gone; keys of other clusters or
// of no known shape are skipped.
#include "cluster/cluster_state_reader.hpp"
#include "cluster/coordination/coordination_keys.hpp"
#include "cluster/membership/members.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace troupe::cluster {
namespace {

namespace coord = sharding::coordination;

key_value kv(std::string key, std::string value, revision created, revision modified = 0) {
  key_value out;
  out.key = std::move(key);
  out.value = std::move(value);
  out.create_revision = created;
  out.mod_revision = modified == 0 ? created : modified;
  out.version = 1;
  return out;
}

key_value member_kv(const std::string& node, lease_id lease, revision at) {
  member_record m;
  m.info.id = {node, lease};
  m.info.roles = {"web"};
  m.address = "127.0.0.1:" + std::to_string(2550 + lease);
  return kv(member_key("c1", node, lease), encode_member(m), at);
}

key_value region_kv(const std::string& type, const std::string& node, lease_id lease, bool proxy,
                    revision at) {
  return kv(region_key("c1", type, {node, lease}), encode_region({{node, lease}, proxy}), at);
}

key_value alloc_kv(const std::string& type, sharding::shard_id shard, const std::string& node,
                   lease_id lease, revision at) {
  return kv(alloc_key("c1", type, shard), encode_owner({node, lease}), at / 2, at);
}

TEST(cluster_state_test, names_members_coordinators_regions_and_shard_owners_of_one_revision) {
  const std::vector<key_value> kvs = {
      member_kv("a", 1, 3),
      member_kv("b", 2, 4),
      kv(coord_key("c1", "cart", 2), "b", 7),
      kv(coord_key("c1", "cart", 1), "a", 9),  // created later: b leads
      region_kv("cart", "a", 1, false, 5),
      region_kv("cart", "b", 2, false, 6),
      region_kv("room", "b", 2, true, 8),
      alloc_kv("cart", 3, "a", 1, 20),
      alloc_kv("cart", 0, "b", 2, 22),
      alloc_kv("cart", 5, "a", 1, 24),
      alloc_kv("cart", 7, "gone", 9, 26),  // its owner's key expired: about to be moved
      kv("/troupe/c1/alloc/cart/not-a-shard", "node=a\nincarnation=1\n", 27),
      kv("/troupe/c1/unknown", "x", 28),
      kv("/troupe/c1/evict/ghost/x", "x", 28),
      kv("/troupe/c1/", "x", 29),
  };
  const cluster_state s = decode_cluster_state("c1", 30, kvs);
  EXPECT_EQ(s.cluster, "c1");
  EXPECT_EQ(s.revision, 30);
  ASSERT_EQ(s.members.size(), 2u);
  EXPECT_EQ(s.members[0].info.id, (coord::member_id{"a", 1}));
  EXPECT_EQ(s.members[0].info.roles, std::vector<std::string>{"web"});
  EXPECT_EQ(s.members[0].address, "127.0.0.1:2551");
  EXPECT_EQ(s.members[0].reach, reachability::not_connected);
  EXPECT_EQ(s.members[1].info.id, (coord::member_id{"b", 2}));

  ASSERT_EQ(s.types.size(), 2u);
  const type_state& cart = s.types[0];
  EXPECT_EQ(cart.type, "cart");
  EXPECT_EQ(cart.coordinator, "b");
  ASSERT_EQ(cart.regions.size(), 2u);
  EXPECT_EQ(cart.regions[0].id, (coord::member_id{"a", 1}));
  EXPECT_EQ(cart.regions[0].shards, 2u);
  EXPECT_EQ(cart.regions[1].id, (coord::member_id{"b", 2}));
  EXPECT_EQ(cart.regions[1].shards, 1u);
  EXPECT_FALSE(cart.regions[1].proxy);
  ASSERT_EQ(cart.shards.size(), 4u);
  EXPECT_EQ(cart.shards[0].shard, 0u);
  EXPECT_EQ(cart.shards[0].owner, (coord::member_id{"b", 2}));
  EXPECT_EQ(cart.shards[0].epoch, 22);
  EXPECT_TRUE(cart.shards[0].owner_is_member);
  EXPECT_EQ(cart.shards[1].shard, 3u);
  EXPECT_EQ(cart.shards[1].epoch, 20);
  EXPECT_EQ(cart.shards[3].shard, 7u);
  EXPECT_FALSE(cart.shards[3].owner_is_member);

  const type_state& room = s.types[1];
  EXPECT_EQ(room.type, "room");
  EXPECT_EQ(room.coordinator, "");
  ASSERT_EQ(room.regions.size(), 1u);
  EXPECT_TRUE(room.regions[0].proxy);
  EXPECT_TRUE(room.shards.empty());
}

TEST(cluster_state_test, an_empty_cluster_has_no_members_and_no_types) {
  const cluster_state s = decode_cluster_state("c1", 4, {member_kv("a", 1, 3)});
  EXPECT_EQ(s.members.size(), 1u);
  EXPECT_TRUE(s.types.empty());
  EXPECT_EQ(decode_cluster_state("c2", 4, {member_kv("a", 1, 3)}).members.size(), 0u)
      << "another cluster's keys are not this one's";
}

TEST(cluster_state_test, reachability_has_a_name) {
  EXPECT_STREQ(to_string(reachability::self), "self");
  EXPECT_STREQ(to_string(reachability::connected), "connected");
  EXPECT_STREQ(to_string(reachability::not_connected), "not connected");
  EXPECT_STREQ(to_string(reachability::unreachable), "unreachable");
}

}  // namespace
}  // namespace troupe::cluster
