// The coordinator's state machine, driven by hand: each safety rule of docs/cluster-coordinator.md
// has a test here.
#include <troupe/core/errc.hpp>
#include <troupe/sharding/coordination/coordinator.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace troupe::sharding::coordination {
namespace {

using namespace std::chrono_literals;
using decisions = std::vector<coordinator_decision>;

constexpr store_revision coord_key = 7;

member_id id(std::string node, std::int64_t incarnation = 1) {
  return member_id{std::move(node), incarnation};
}

member_info member(std::string node, std::int64_t incarnation = 1,
                   std::vector<std::string> roles = {}) {
  return member_info{id(std::move(node), incarnation), std::move(roles), false, "1"};
}

member_info leaving(std::string node) {
  auto m = member(std::move(node));
  m.leaving = true;
  return m;
}

region_info region(std::string node, std::int64_t incarnation = 1, bool proxy = false) {
  return region_info{id(std::move(node), incarnation), proxy};
}

template <class T>
std::vector<T> only(const decisions& ds) {
  std::vector<T> out;
  for (const auto& d : ds) {
    if (const auto* t = std::get_if<T>(&d)) {
      out.push_back(*t);
    }
  }
  return out;
}

// A strategy that always answers the same member: to show the coordinator checks answers.
class fixed_strategy final : public allocation_strategy {
 public:
  explicit fixed_strategy(member_id to) : to_(std::move(to)) {}
  std::optional<member_id> allocate(shard_id, std::span<const region_view>) override { return to_; }
  std::vector<shard_id> rebalance(std::span<const region_view>,
                                  std::span<const shard_id>) override {
    return {};
  }

 private:
  member_id to_;
};

struct harness {
  explicit harness(coordinator_settings settings = {},
                   std::unique_ptr<allocation_strategy> strategy = make_least_shards_strategy())
      : c(std::move(settings), std::move(strategy)) {}

  // Elected, then the state read at revision 100.
  decisions start(std::vector<member_info> members, std::vector<region_info> regions,
                  std::vector<allocation> allocations = {}, std::vector<handoff> handoffs = {}) {
    const auto first = c.handle(elected{coord_key});
    EXPECT_EQ(first, decisions{read_state{}});
    return c.handle(state_read{100, std::move(members), std::move(regions), std::move(allocations),
                               std::move(handoffs)});
  }

  decisions ask(shard_id shard, member_id requester = id("b")) {
    return c.handle(home_requested{std::move(requester), shard});
  }

  coordinator c;
};

TEST(Coordinator, NeedsAStrategy) {
  EXPECT_THROW({ coordinator c({}, nullptr); }, error);
}

TEST(Coordinator, DecidesNothingBeforeItIsElectedOrHasReadTheState) {
  harness h;
  EXPECT_TRUE(h.ask(1).empty());
  EXPECT_TRUE(h.c.handle(member_deleted{50, id("a")}).empty());
  EXPECT_TRUE(h.c.handle(tick{time_point{} + 1h}).empty());
  EXPECT_EQ(h.c.handle(elected{coord_key}), decisions{read_state{}});
  EXPECT_TRUE(h.ask(1).empty()) << "no decision before the state is read";
  EXPECT_FALSE(h.c.deciding());
  EXPECT_EQ(h.c.hosting_regions(), 0U) << "counted only while deciding";
  const auto ds = h.c.handle(state_read{100, {member("a")}, {region("a")}, {}, {}});
  EXPECT_TRUE(h.c.deciding());
  EXPECT_EQ(h.c.hosting_regions(), 1U);
  ASSERT_EQ(only<write_allocations>(ds).size(), 1U) << "the ask made while reading is served";
}

TEST(Coordinator, AllocatesAnUnknownShardCreateIfAbsentWithItsElectionKey) {
  harness h;
  h.start({member("a"), member("b")}, {region("a"), region("b")});
  const auto ds = h.ask(9);
  const auto writes = only<write_allocations>(ds);
  ASSERT_EQ(writes.size(), 1U);
  EXPECT_EQ(writes[0].coordinator_key_create_revision, coord_key);
  EXPECT_EQ(writes[0].dead_owner, std::nullopt);
  ASSERT_EQ(writes[0].shards.size(), 1U);
  EXPECT_EQ(writes[0].shards[0], (allocation_write{9, id("a"), 0}));
  EXPECT_TRUE(only<answer_home>(ds).empty()) << "no answer before the write commits";
}

TEST(Coordinator, AnswersAKnownHomeAtOnceWithItsEpoch) {
  harness h;
  h.start({member("a"), member("b")}, {region("a"), region("b")}, {allocation{4, id("a"), 60}});
  EXPECT_EQ(h.ask(4, id("b")), decisions{(answer_home{id("b"), 4, id("a"), 60})});
}

TEST(Coordinator, KeepsOneWritePerShardAndAnswersEveryAskWhenItCommits) {
  harness h;
  h.start({member("a"), member("b")}, {region("a"), region("b")});
  const auto first = h.ask(3, id("a"));
  const auto writes = only<write_allocations>(first);
  ASSERT_EQ(writes.size(), 1U);
  // Another ask, and events that run the reconcile pass, decide no second write for shard 3.
  EXPECT_TRUE(h.ask(3, id("b")).empty());
  EXPECT_TRUE(h.ask(3, id("b")).empty());
  EXPECT_TRUE(h.c.handle(region_put{101, region("c")}).empty());
  EXPECT_TRUE(h.c.handle(tick{time_point{} + 1h}).empty());
  EXPECT_EQ(h.c.shards_in_flight(), std::vector<shard_id>{3});

  const auto committed = h.c.handle(write_committed{writes[0].id, 120});
  EXPECT_EQ(committed, (decisions{answer_home{id("a"), 3, id("a"), 120},
                                  answer_home{id("b"), 3, id("a"), 120}}));
  EXPECT_TRUE(h.c.shards_in_flight().empty());
  EXPECT_EQ(h.c.allocations().at(3), (allocation{3, id("a"), 120}));
  // The watch's copy of the same put changes nothing.
  EXPECT_TRUE(h.c.handle(allocation_put{allocation{3, id("a"), 120}}).empty());
  EXPECT_EQ(h.ask(3, id("b")), decisions{(answer_home{id("b"), 3, id("a"), 120})});
}

TEST(Coordinator, NeverReallocatesAShardWhoseOwnersMemberKeyExists) {
  harness h;
  h.start({member("a"), member("b")}, {region("a"), region("b")}, {allocation{5, id("a"), 60}});
  // a's region disappears and a long time passes: a may still be running its entities, so the
  // shard stays with a (the region bounces; only a's member key going proves it stopped).
  EXPECT_TRUE(h.c.handle(region_deleted{101, id("a")}).empty());
  for (int i = 1; i < 10; ++i) {
    EXPECT_TRUE(h.c.handle(tick{time_point{} + i * 1h}).empty());
  }
  EXPECT_EQ(h.ask(5), decisions{(answer_home{id("b"), 5, id("a"), 60})});
  // Its member key goes: now the shard moves, guarded by the old epoch and the key's absence.
  const auto ds = h.c.handle(member_deleted{102, id("a")});
  const auto writes = only<write_allocations>(ds);
  ASSERT_EQ(writes.size(), 1U);
  EXPECT_EQ(writes[0].shards, std::vector{(allocation_write{5, id("b"), 60})});
  EXPECT_EQ(writes[0].dead_owner, id("a"));
  EXPECT_EQ(writes[0].coordinator_key_create_revision, coord_key);
}

TEST(Coordinator, ReallocatesADeadMembersShardsInBatchesOfAtMost126) {
  harness h;
  std::vector<allocation> allocations;
  for (shard_id s = 0; s < 300; ++s) {
    allocations.push_back(allocation{s, id("a"), 50 + static_cast<store_revision>(s)});
  }
  h.start({member("a"), member("b"), member("c")}, {region("a"), region("b"), region("c")},
          allocations);
  const auto writes = only<write_allocations>(h.c.handle(member_deleted{101, id("a")}));
  ASSERT_EQ(writes.size(), 3U);
  EXPECT_EQ(writes[0].shards.size(), 126U);
  EXPECT_EQ(writes[1].shards.size(), 126U);
  EXPECT_EQ(writes[2].shards.size(), 48U);
  std::size_t to_b = 0;
  for (const auto& w : writes) {
    EXPECT_EQ(w.dead_owner, id("a"));
    EXPECT_EQ(w.coordinator_key_create_revision, coord_key);
    for (const auto& s : w.shards) {
      EXPECT_EQ(s.expected_mod_revision, 50 + static_cast<store_revision>(s.shard));
      EXPECT_NE(s.owner, id("a"));
      to_b += s.owner == id("b") ? 1 : 0;
    }
  }
  EXPECT_EQ(to_b, 150U) << "least shards spreads the dead member's shards evenly";
}

TEST(Coordinator, ADeposedCoordinatorDecidesNothing) {
  harness h;
  h.start({member("a"), member("b")}, {region("a"), region("b")}, {allocation{1, id("a"), 60}});
  const auto writes = only<write_allocations>(h.ask(2));
  ASSERT_EQ(writes.size(), 1U);
  EXPECT_TRUE(h.c.handle(deposed{}).empty());
  EXPECT_FALSE(h.c.deciding());
  EXPECT_TRUE(h.c.handle(write_committed{writes[0].id, 120}).empty());
  EXPECT_TRUE(h.ask(1).empty());
  EXPECT_TRUE(h.ask(2).empty());
  EXPECT_TRUE(h.c.handle(member_deleted{130, id("a")}).empty());
  EXPECT_TRUE(h.c.handle(state_read{140, {member("b")}, {region("b")}, {}, {}}).empty());
  EXPECT_TRUE(h.c.handle(tick{time_point{} + 1h}).empty());
  EXPECT_TRUE(h.c.allocations().empty()) << "it forgets what it knew";
  // Elected again (a new key), it starts from a fresh read.
  EXPECT_EQ(h.c.handle(elected{coord_key + 100}), decisions{read_state{}});
  EXPECT_TRUE(h.c.handle(write_committed{writes[0].id, 120}).empty()) << "an old term's write";
  const auto again =
      h.c.handle(state_read{150, {member("b")}, {region("b")}, {allocation{1, id("a"), 60}}, {}});
  const auto moves = only<write_allocations>(again);
  ASSERT_EQ(moves.size(), 1U);
  EXPECT_EQ(moves[0].coordinator_key_create_revision, coord_key + 100);
}

TEST(Coordinator, RereadsAfterAFailedCompareInsteadOfRetrying) {
  harness h;
  h.start({member("a"), member("b")}, {region("a"), region("b")});
  const auto writes = only<write_allocations>(h.ask(6));
  ASSERT_EQ(writes.size(), 1U);
  EXPECT_EQ(h.c.handle(write_failed{writes[0].id}), decisions{read_state{}});
  EXPECT_FALSE(h.c.deciding());
  // Until the read arrives nothing is written, however often the shard is asked for.
  EXPECT_TRUE(h.ask(6).empty());
  EXPECT_TRUE(h.c.handle(tick{time_point{} + 1h}).empty());
  // The read shows why: the shard already had a home.
  const auto ds = h.c.handle(state_read{130,
                                        {member("a"), member("b")},
                                        {region("a"), region("b")},
                                        {allocation{6, id("b"), 125}},
                                        {}});
  EXPECT_EQ(ds, decisions{(answer_home{id("b"), 6, id("b"), 125})});
}

TEST(Coordinator, RereadsAfterAnUnknownOutcomeAndWritesAgainOnlyIfTheReadSaysSo) {
  harness h;
  h.start({member("a"), member("b")}, {region("a"), region("b")});
  const auto writes = only<write_allocations>(h.ask(6));
  ASSERT_EQ(writes.size(), 1U);
  EXPECT_EQ(h.c.handle(write_unknown{writes[0].id}), decisions{read_state{}});
  // A late outcome of the write it gave up on changes nothing: the read will show it.
  EXPECT_TRUE(h.c.handle(write_committed{writes[0].id, 999}).empty());
  const auto second = only<write_allocations>(h.ask(7));
  EXPECT_TRUE(second.empty());
  // The read shows no allocation: the write did not apply, so a new one (a new id) is decided.
  const auto ds =
      h.c.handle(state_read{130, {member("a"), member("b")}, {region("a"), region("b")}, {}, {}});
  const auto again = only<write_allocations>(ds);
  ASSERT_EQ(again.size(), 1U);
  EXPECT_NE(again[0].id, writes[0].id);
  EXPECT_EQ(again[0].shards.size(), 2U) << "shards 6 and 7 together, create if absent";
}

TEST(Coordinator, AFailureWhileReadingReadsOnceMore) {
  harness h;
  h.start({member("a"), member("b")}, {region("a"), region("b")});
  const auto w1 = only<write_allocations>(h.ask(1));
  const auto w2 = only<write_allocations>(h.c.handle(home_requested{id("b"), 2}));
  ASSERT_EQ(w1.size(), 1U);
  ASSERT_EQ(w2.size(), 1U);
  EXPECT_EQ(h.c.handle(write_failed{w1[0].id}), decisions{read_state{}});
  EXPECT_TRUE(h.c.handle(write_failed{w2[0].id}).empty()) << "one read at a time";
  EXPECT_EQ(
      h.c.handle(state_read{130, {member("a"), member("b")}, {region("a"), region("b")}, {}, {}}),
      decisions{read_state{}});
  EXPECT_EQ(only<write_allocations>(
                h.c.handle(state_read{
                    131, {member("a"), member("b")}, {region("a"), region("b")}, {}, {}}))
                .size(),
            1U);
}

TEST(Coordinator, ProxiesAndRegionsWithoutTheRoleNeverReceiveAShard) {
  coordinator_settings settings;
  settings.role = "worker";
  harness h(settings);
  // a: a proxy with the role; b: no role; c's member is unknown.
  h.start({member("a", 1, {"worker"}), member("b", 1, {"web"})},
          {region("a", 1, true), region("b"), region("c")});
  EXPECT_TRUE(h.ask(1).empty()) << "nowhere to host: the ask waits";
  EXPECT_EQ(h.c.hosting_regions(), 0U);
  EXPECT_TRUE(h.c.handle(region_put{101, region("c")}).empty()) << "c's member key is not known";
  EXPECT_EQ(h.c.hosting_regions(), 0U);
  const auto ds = h.c.handle(member_put{102, member("c", 1, {"worker", "web"})});
  EXPECT_EQ(h.c.hosting_regions(), 1U);
  const auto writes = only<write_allocations>(ds);
  ASSERT_EQ(writes.size(), 1U);
  EXPECT_EQ(writes[0].shards, std::vector{(allocation_write{1, id("c"), 0})});
  for (shard_id s = 2; s < 20; ++s) {
    for (const auto& w : only<write_allocations>(h.ask(s))) {
      EXPECT_EQ(w.shards.at(0).owner, id("c"));
    }
  }
}

TEST(Coordinator, RefusesAUserStrategyThatPicksARegionThatMayNotHost) {
  harness h({}, std::make_unique<fixed_strategy>(id("a")));
  h.start({member("a"), member("b")}, {region("a", 1, true), region("b")});
  const auto ds = h.ask(3);
  EXPECT_TRUE(only<write_allocations>(ds).empty());
  const auto errors = only<strategy_error>(ds);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0].shard, 3U);
  EXPECT_NE(errors[0].message.find("a#1"), std::string::npos) << errors[0].message;
}

TEST(Coordinator, RunsAUserStrategy) {
  harness h({}, std::make_unique<fixed_strategy>(id("b")));
  h.start({member("a"), member("b")}, {region("a"), region("b")});
  const auto writes = only<write_allocations>(h.ask(3));
  ASSERT_EQ(writes.size(), 1U);
  EXPECT_EQ(writes[0].shards.at(0).owner, id("b"));
}

TEST(Coordinator, ANewIncarnationNeverInheritsTheOldOnesShards) {
  // The strategy prefers a's new incarnation, to show it gets the shard only by a new write.
  harness h({}, std::make_unique<fixed_strategy>(id("a", 2)));
  h.start({member("a", 1), member("a", 2), member("b")},
          {region("a", 1), region("a", 2), region("b")}, {allocation{5, id("a", 1), 60}});
  // While a#1's key exists, a#1 owns the shard, whoever asks (a#2 included).
  EXPECT_EQ(h.ask(5, id("a", 2)), decisions{(answer_home{id("a", 2), 5, id("a", 1), 60})});
  // a#1's key goes: the shard moves by a new allocation with a new epoch, never by a#2 taking
  // over a#1's allocation.
  const auto writes = only<write_allocations>(h.c.handle(member_deleted{101, id("a", 1)}));
  ASSERT_EQ(writes.size(), 1U);
  EXPECT_EQ(writes[0].shards, std::vector{(allocation_write{5, id("a", 2), 60})});
  EXPECT_EQ(writes[0].dead_owner, id("a", 1));
  EXPECT_TRUE(h.ask(5, id("b")).empty()) << "no answer while the move is in flight";
  EXPECT_EQ(h.c.handle(write_committed{writes[0].id, 130}),
            decisions{(answer_home{id("b"), 5, id("a", 2), 130})});
}

TEST(Coordinator, AnAllocationToAMemberThatDiedMeanwhileIsMovedNotAnswered) {
  harness h;
  h.start({member("a"), member("b")}, {region("a"), region("b")});
  const auto writes = only<write_allocations>(h.ask(2, id("b")));
  ASSERT_EQ(writes.size(), 1U);
  ASSERT_EQ(writes[0].shards.at(0).owner, id("a"));
  EXPECT_TRUE(h.c.handle(member_deleted{110, id("a")}).empty()) << "the write is in flight";
  const auto ds = h.c.handle(write_committed{writes[0].id, 120});
  EXPECT_TRUE(only<answer_home>(ds).empty());
  const auto moves = only<write_allocations>(ds);
  ASSERT_EQ(moves.size(), 1U);
  EXPECT_EQ(moves[0].shards, std::vector{(allocation_write{2, id("b"), 120})});
  EXPECT_EQ(moves[0].dead_owner, id("a"));
}

TEST(Coordinator, IgnoresChangesTheReadAlreadyCovers) {
  harness h;
  h.start({member("a"), member("b")}, {region("a"), region("b")}, {allocation{1, id("a"), 60}});
  // A deletion of revision 90 is older than the read at 100, which saw a: it is stale.
  EXPECT_TRUE(h.c.handle(member_deleted{90, id("a")}).empty());
  EXPECT_TRUE(h.c.handle(allocation_put{allocation{1, id("b"), 55}}).empty());
  EXPECT_EQ(h.ask(1), decisions{(answer_home{id("b"), 1, id("a"), 60})});
}

TEST(Coordinator, AppliesChangesThatArriveBeforeTheReadAfterIt) {
  harness h;
  EXPECT_EQ(h.c.handle(elected{coord_key}), decisions{read_state{}});
  EXPECT_TRUE(h.c.handle(member_deleted{95, id("a")}).empty());   // covered by the read
  EXPECT_TRUE(h.c.handle(member_deleted{105, id("a")}).empty());  // newer than the read
  const auto ds = h.c.handle(state_read{100,
                                        {member("a"), member("b")},
                                        {region("a"), region("b")},
                                        {allocation{1, id("a"), 60}},
                                        {}});
  const auto writes = only<write_allocations>(ds);
  ASSERT_EQ(writes.size(), 1U);
  EXPECT_EQ(writes[0].dead_owner, id("a"));
}

TEST(Coordinator, KeepsADeadMembersShardsUntilARegionMayHostThem) {
  harness h;
  h.start({member("a"), member("b", 1)}, {region("a"), region("b", 1, true)},
          {allocation{1, id("a"), 60}});
  EXPECT_TRUE(h.c.handle(member_deleted{101, id("a")}).empty());
  EXPECT_TRUE(h.ask(1).empty());
  const auto ds = h.c.handle(region_put{102, region("b")});
  const auto writes = only<write_allocations>(ds);
  ASSERT_EQ(writes.size(), 1U);
  EXPECT_EQ(writes[0].shards, std::vector{(allocation_write{1, id("b"), 60})});
}

TEST(Coordinator, KeepsACommitNewerThanTheReadThatFollowsIt) {
  harness h;
  h.start({member("a"), member("b")}, {region("a"), region("b")});
  const auto w1 = only<write_allocations>(h.ask(1));
  const auto w2 = only<write_allocations>(h.ask(2));
  ASSERT_EQ(w1.size(), 1U);
  ASSERT_EQ(w2.size(), 1U);
  EXPECT_EQ(h.c.handle(write_failed{w1[0].id}), decisions{read_state{}});
  // Shard 2's write commits at 140 while the read (taken at 130) is on its way.
  EXPECT_TRUE(h.c.handle(write_committed{w2[0].id, 140}).empty());
  const auto ds =
      h.c.handle(state_read{130, {member("a"), member("b")}, {region("a"), region("b")}, {}, {}});
  EXPECT_EQ(only<answer_home>(ds),
            std::vector{(answer_home{id("b"), 2, w2[0].shards[0].owner, 140})});
  const auto writes = only<write_allocations>(ds);
  ASSERT_EQ(writes.size(), 1U);
  EXPECT_EQ(writes[0].shards.size(), 1U) << "only shard 1 is written again";
  EXPECT_EQ(writes[0].shards[0].shard, 1U);
}

class throwing_strategy final : public allocation_strategy {
 public:
  std::optional<member_id> allocate(shard_id, std::span<const region_view>) override {
    throw std::runtime_error("no idea");
  }
  std::vector<shard_id> rebalance(std::span<const region_view>,
                                  std::span<const shard_id>) override {
    throw std::runtime_error("no plan");
  }
};

TEST(Coordinator, ReportsAStrategyThatThrows) {
  harness h({}, std::make_unique<throwing_strategy>());
  h.start({member("a")}, {region("a")});
  const auto ds = h.ask(4);
  EXPECT_TRUE(only<write_allocations>(ds).empty());
  ASSERT_EQ(only<strategy_error>(ds).size(), 1U);
  EXPECT_NE(only<strategy_error>(ds)[0].message.find("no idea"), std::string::npos);
  const auto ticked = only<strategy_error>(h.c.handle(tick{time_point{} + 1h}));
  ASSERT_EQ(ticked.size(), 2U);
  EXPECT_NE(ticked[1].message.find("no plan"), std::string::npos);
}

TEST(Coordinator, RunsTheSpecsDefaultStrategy) {
  harness h({}, make_hash_mod_regions_strategy());
  h.start({member("a"), member("b"), member("c")}, {region("c"), region("b"), region("a")});
  for (shard_id s = 0; s < 6; ++s) {
    const auto writes = only<write_allocations>(h.ask(s));
    ASSERT_EQ(writes.size(), 1U);
    EXPECT_EQ(writes[0].shards.at(0).owner.node, std::string(1, static_cast<char>('a' + s % 3)));
  }
}

// -- hand-offs ---------------------------------------------------------------------------------

constexpr auto t0 = time_point{} + 1h;

// A strategy under the test's control: the first rebalance names `moves` (later ones nothing),
// and allocate answers the first region of `prefer` it is offered that is not leaving. It
// records what it saw.
class scripted_strategy final : public allocation_strategy {
 public:
  scripted_strategy(std::vector<shard_id> moves, std::vector<member_id> prefer)
      : moves_(std::move(moves)), prefer_(std::move(prefer)) {}

  std::optional<member_id> allocate(shard_id, std::span<const region_view> regions) override {
    views.emplace_back(regions.begin(), regions.end());
    for (const auto& p : prefer_) {
      for (const auto& r : regions) {
        if (r.region == p && !r.leaving) {
          return p;
        }
      }
    }
    return std::nullopt;
  }

  std::vector<shard_id> rebalance(std::span<const region_view>,
                                  std::span<const shard_id>) override {
    ++rebalances;
    return std::exchange(moves_, {});
  }

  std::vector<std::vector<region_view>> views;  // the regions each allocate call was offered
  int rebalances = 0;

 private:
  std::vector<shard_id> moves_;
  std::vector<member_id> prefer_;
};

// A harness whose strategy is scripted.
struct scripted {
  explicit scripted(std::vector<shard_id> moves, std::vector<member_id> prefer = {id("b")},
                    coordinator_settings settings = {})
      : scripted(std::make_unique<scripted_strategy>(std::move(moves), std::move(prefer)),
                 std::move(settings)) {}
  scripted(std::unique_ptr<scripted_strategy> s, coordinator_settings settings)
      : strategy(*s), h(std::move(settings), std::move(s)) {}

  // Shard 5 lives on a at epoch 60; the first tick (at t0) rebalances it towards the strategy's
  // pick, and that begin commits at 130, the hand-off's name.
  handoff begin_moving_shard_5(std::vector<member_info> members = {member("a"), member("b")},
                               std::vector<region_info> regions = {region("a"), region("b")}) {
    EXPECT_TRUE(
        h.start(std::move(members), std::move(regions), {allocation{5, id("a"), 60}}).empty());
    const auto begins = only<begin_handoffs>(h.c.handle(tick{t0}));
    EXPECT_EQ(begins.size(), 1U);
    EXPECT_TRUE(h.c.handle(write_committed{begins.at(0).id, 130}).empty());
    return h.c.handoffs().at(5);
  }

  scripted_strategy& strategy;
  harness h;
};

TEST(Coordinator, RebalancesByBeginningHandOffsOfTheShardsTheStrategyNames) {
  // Shard 2 twice, and 9, which has no allocation: only 1 and 2 move.
  scripted s({1, 2, 2, 9});
  s.h.start({member("a"), member("b")}, {region("a"), region("b")},
            {allocation{1, id("a"), 60}, allocation{2, id("a"), 61}, allocation{3, id("a"), 62}});
  const auto ds = s.h.c.handle(tick{t0});
  const auto begins = only<begin_handoffs>(ds);
  ASSERT_EQ(begins.size(), 1U);
  EXPECT_EQ(ds, decisions{(begin_handoffs{begins[0].id,
                                          coord_key,
                                          {handoff_start{1, id("a"), id("b"), 60},
                                           handoff_start{2, id("a"), id("b"), 61}}})});
  EXPECT_EQ(s.h.c.shards_in_flight(), (std::vector<shard_id>{1, 2}));
  // Each pick saw the owner one shard lighter, and the picks before it.
  ASSERT_EQ(s.strategy.views.size(), 2U);
  EXPECT_EQ(s.strategy.views[0][0].shards, (std::vector<shard_id>{2, 3}));
  EXPECT_EQ(s.strategy.views[0][1].shards, std::vector<shard_id>{});
  EXPECT_EQ(s.strategy.views[1][0].shards, std::vector<shard_id>{3});
  EXPECT_EQ(s.strategy.views[1][1].shards, std::vector<shard_id>{1});
  // The commit names the hand-offs; the shards stay with a until they are committed.
  EXPECT_TRUE(s.h.c.handle(write_committed{begins[0].id, 130}).empty());
  EXPECT_EQ(s.h.c.handoffs().at(1), (handoff{1, id("a"), id("b"), 60, 130, false}));
  EXPECT_EQ(s.h.c.handoffs().at(2), (handoff{2, id("a"), id("b"), 61, 130, false}));
  EXPECT_EQ(s.h.c.allocations().at(1), (allocation{1, id("a"), 60}));
  EXPECT_TRUE(s.h.c.shards_in_flight().empty());
  // A shard with a hand-off counts for its target.
  EXPECT_TRUE(s.h.c.handle(tick{t0 + 1s}).empty());
}

TEST(Coordinator, BeginsAtMost63HandOffsPerWrite) {
  std::vector<shard_id> moves;
  std::vector<allocation> allocations;
  for (shard_id s = 0; s < 150; ++s) {
    moves.push_back(s);
    allocations.push_back(allocation{s, id("a"), 50});
  }
  scripted s(moves);
  s.h.start({member("a"), member("b")}, {region("a"), region("b")}, allocations);
  const auto begins = only<begin_handoffs>(s.h.c.handle(tick{t0}));
  ASSERT_EQ(begins.size(), 3U);
  EXPECT_EQ(begins[0].shards.size(), 63U);
  EXPECT_EQ(begins[1].shards.size(), 63U);
  EXPECT_EQ(begins[2].shards.size(), 24U);
  EXPECT_NE(begins[0].id, begins[1].id);
  EXPECT_NE(begins[1].id, begins[2].id);
  shard_id next = 0;
  for (const auto& b : begins) {
    EXPECT_EQ(b.coordinator_key_create_revision, coord_key);
    for (const auto& h : b.shards) {
      EXPECT_EQ(h, (handoff_start{next++, id("a"), id("b"), 50}));
    }
  }
}

TEST(Coordinator, CommitsAHandOffOnlyAfterTheOldOwnerStoppedTheShard) {
  coordinator_settings settings;
  settings.handoff_timeout = 24h;
  scripted s({5}, {id("b")}, settings);
  const auto h = s.begin_moving_shard_5();
  EXPECT_EQ(h, (handoff{5, id("a"), id("b"), 60, 130, false}));
  // Ticks alone never move it: a may still run the shard.
  for (int i = 1; i < 100; ++i) {
    EXPECT_TRUE(s.h.c.handle(tick{t0 + i * 1min}).empty());
  }
  const auto ds = s.h.c.handle(shard_stopped{140, 5, 130});
  const auto commits = only<commit_handoff>(ds);
  ASSERT_EQ(commits.size(), 1U);
  EXPECT_EQ(ds, decisions{(commit_handoff{commits[0].id, coord_key, 5, id("b"), 60, 130})});
  EXPECT_TRUE(s.h.c.handle(write_committed{commits[0].id, 150}).empty());
  EXPECT_EQ(s.h.c.allocations().at(5), (allocation{5, id("b"), 150}));
  EXPECT_TRUE(s.h.c.handoffs().empty());
  // The watch's copies of the hand-off's key, older than its end, bring nothing back.
  EXPECT_TRUE(s.h.c.handle(handoff_put{h}).empty());
  EXPECT_TRUE(s.h.c.handoffs().empty());
  EXPECT_TRUE(s.h.c.handle(handoff_deleted{150, 5}).empty());
  EXPECT_EQ(s.h.ask(5, id("c")), decisions{(answer_home{id("c"), 5, id("b"), 150})});
}

TEST(Coordinator, IgnoresAStopReportedForAnotherHandOff) {
  scripted s({5});
  s.begin_moving_shard_5();
  EXPECT_TRUE(s.h.c.handle(shard_stopped{140, 5, 129}).empty());
  EXPECT_FALSE(s.h.c.handoffs().at(5).stopped);
  EXPECT_TRUE(s.h.c.handle(tick{t0 + 1s}).empty());
}

TEST(Coordinator, AbortsAHandOffNotStoppedInTimeAndLeavesTheShardWithItsOwner) {
  coordinator_settings settings;
  settings.handoff_timeout = 10s;
  scripted s({5}, {id("b")}, settings);
  s.begin_moving_shard_5();  // known since the tick at t0
  EXPECT_TRUE(s.h.c.handle(tick{t0 + 9s}).empty()) << "not before the timeout";
  const auto ds = s.h.c.handle(tick{t0 + 10s});
  const auto aborts = only<abort_handoff>(ds);
  ASSERT_EQ(aborts.size(), 1U);
  EXPECT_EQ(ds, decisions{(abort_handoff{aborts[0].id, coord_key, 5, 130, aborts[0].reason})});
  EXPECT_NE(aborts[0].reason.find("did not stop"), std::string::npos) << aborts[0].reason;
  EXPECT_TRUE(s.h.ask(5, id("c")).empty()) << "asks wait for the abort";
  EXPECT_EQ(s.h.c.handle(write_committed{aborts[0].id, 150}),
            decisions{(answer_home{id("c"), 5, id("a"), 60})});
  EXPECT_TRUE(s.h.c.handoffs().empty());
  // The shard stays with a at its epoch, however long it is slow.
  for (int i = 1; i < 100; ++i) {
    EXPECT_TRUE(s.h.c.handle(tick{t0 + 10s + i * 1min}).empty());
  }
  EXPECT_EQ(s.h.c.allocations().at(5), (allocation{5, id("a"), 60}));
}

TEST(Coordinator, AbortsAtOnceWhenTheOldOwnerIsGoneThenMovesTheShardAsADeadOwners) {
  scripted s({5});
  s.begin_moving_shard_5();
  EXPECT_TRUE(s.h.ask(5, id("b")).empty());
  const auto ds = s.h.c.handle(member_deleted{140, id("a")});
  const auto aborts = only<abort_handoff>(ds);
  ASSERT_EQ(aborts.size(), 1U);
  EXPECT_EQ(ds, decisions{(abort_handoff{aborts[0].id, coord_key, 5, 130, aborts[0].reason})})
      << "no move before the abort commits";
  EXPECT_NE(aborts[0].reason.find("gone"), std::string::npos) << aborts[0].reason;
  const auto moved = s.h.c.handle(write_committed{aborts[0].id, 150});
  const auto writes = only<write_allocations>(moved);
  ASSERT_EQ(writes.size(), 1U);
  EXPECT_EQ(moved, decisions{(write_allocations{
                       writes[0].id, coord_key, {allocation_write{5, id("b"), 60}}, id("a")})});
  EXPECT_EQ(s.h.c.handle(write_committed{writes[0].id, 160}),
            decisions{(answer_home{id("b"), 5, id("b"), 160})});
}

TEST(Coordinator, CommitsToAnotherRegionWhenTheTargetCannotHostAnyMore) {
  scripted s({5}, {id("b"), id("c")});
  s.begin_moving_shard_5({member("a"), member("b"), member("c")},
                         {region("a"), region("b"), region("c")});
  EXPECT_TRUE(s.h.c.handle(region_deleted{140, id("b")}).empty());
  const auto ds = s.h.c.handle(shard_stopped{141, 5, 130});
  const auto commits = only<commit_handoff>(ds);
  ASSERT_EQ(commits.size(), 1U);
  EXPECT_EQ(ds, decisions{(commit_handoff{commits[0].id, coord_key, 5, id("c"), 60, 130})});
}

TEST(Coordinator, CommitsNeitherToALeavingTargetNorBackToTheOldOwner) {
  // Once b leaves, the strategy answers a, the old owner: the stopped shard waits for a region.
  scripted s({5}, {id("b"), id("c"), id("a")});
  s.begin_moving_shard_5();
  EXPECT_TRUE(s.h.c.handle(member_put{140, leaving("b")}).empty());
  EXPECT_TRUE(s.h.c.handle(shard_stopped{141, 5, 130}).empty());
  EXPECT_TRUE(s.h.c.handle(tick{t0 + 1s}).empty()) << "it waits for a region, within the timeout";
  EXPECT_TRUE(s.h.c.handoffs().at(5).stopped);
  EXPECT_TRUE(s.h.c.handle(member_put{142, member("c")}).empty());
  const auto ds = s.h.c.handle(region_put{143, region("c")});
  const auto commits = only<commit_handoff>(ds);
  ASSERT_EQ(commits.size(), 1U);
  EXPECT_EQ(ds, decisions{(commit_handoff{commits[0].id, coord_key, 5, id("c"), 60, 130})});
}

TEST(Coordinator, GivesAStoppedShardBackToItsOwnerWhenNoRegionMayTakeItInTime) {
  // Rather than nobody running it: the old owner starts it again at its epoch once aborted.
  scripted s({5}, {id("b"), id("a")});
  s.begin_moving_shard_5();
  EXPECT_TRUE(s.h.c.handle(member_put{140, leaving("b")}).empty());
  EXPECT_TRUE(s.h.c.handle(shard_stopped{141, 5, 130}).empty());
  const auto ds = s.h.c.handle(tick{t0 + 1h});
  const auto aborts = only<abort_handoff>(ds);
  ASSERT_EQ(aborts.size(), 1U);
  EXPECT_EQ(ds, decisions{(abort_handoff{aborts[0].id, coord_key, 5, 130, aborts[0].reason})});
  EXPECT_TRUE(only<write_allocations>(ds).empty()) << "an abort moves nothing";
}

TEST(Coordinator, AnswersAskDuringAHandOffOnlyWithTheNewOwnerAndEpoch) {
  scripted s({5});
  s.begin_moving_shard_5();
  EXPECT_TRUE(s.h.ask(5, id("a")).empty());
  EXPECT_TRUE(s.h.ask(5, id("b")).empty());
  const auto commits = only<commit_handoff>(s.h.c.handle(shard_stopped{140, 5, 130}));
  ASSERT_EQ(commits.size(), 1U);
  EXPECT_TRUE(s.h.ask(5, id("c")).empty());
  EXPECT_EQ(s.h.c.handle(write_committed{commits[0].id, 150}),
            (decisions{answer_home{id("a"), 5, id("b"), 150}, answer_home{id("b"), 5, id("b"), 150},
                       answer_home{id("c"), 5, id("b"), 150}}));
}

TEST(Coordinator, HandsOffTheShardsOfALeavingMember) {
  harness h;
  h.start({member("a"), member("b"), member("c")}, {region("a"), region("b"), region("c")},
          {allocation{1, id("a"), 60}, allocation{2, id("a"), 61}, allocation{3, id("b"), 62}});
  const auto ds = h.c.handle(member_put{101, leaving("a")});
  const auto begins = only<begin_handoffs>(ds);
  ASSERT_EQ(begins.size(), 1U);
  // Least shards: shard 1 to c (none yet), then 2 to b or c (one each), b by member id.
  EXPECT_EQ(ds, decisions{(begin_handoffs{begins[0].id,
                                          coord_key,
                                          {handoff_start{1, id("a"), id("c"), 60},
                                           handoff_start{2, id("a"), id("b"), 61}}})});
  EXPECT_TRUE(h.c.handle(write_committed{begins[0].id, 130}).empty()) << "never a second begin";
  EXPECT_EQ(h.c.handoffs().size(), 2U);
  EXPECT_TRUE(h.c.handle(member_put{131, leaving("a")}).empty());
}

TEST(Coordinator, KeepsALeavingMembersShardsWhenNoOtherRegionMayHost) {
  harness h;
  h.start({member("a"), member("b")}, {region("a"), region("b", 1, true)},
          {allocation{1, id("a"), 60}});
  EXPECT_TRUE(h.c.handle(member_put{101, leaving("a")}).empty());
  const auto ds = h.c.handle(region_put{102, region("b")});
  EXPECT_EQ(only<begin_handoffs>(ds).size(), 1U) << "moved once a region may take it";
}

TEST(Coordinator, RebalancesNeitherWhileAMemberLeavesNorWhileAHandOffOrWriteRuns) {
  coordinator_settings settings;
  settings.rebalance_interval = 10s;
  settings.handoff_timeout = 24h;
  scripted s({5}, {id("b")}, settings);
  // A member without shards leaves: no rebalance.
  EXPECT_TRUE(s.h.start({member("a"), member("b"), leaving("c")}, {region("a"), region("b")},
                        {allocation{5, id("a"), 60}, allocation{6, id("a"), 61}},
                        {handoff{6, id("a"), id("b"), 61, 90, false}})
                  .empty());
  EXPECT_TRUE(s.h.c.handle(tick{t0}).empty());
  EXPECT_EQ(s.strategy.rebalances, 0);
  // c is gone; a hand-off still runs.
  EXPECT_TRUE(s.h.c.handle(member_deleted{101, id("c")}).empty());
  EXPECT_TRUE(s.h.c.handle(tick{t0 + 10s}).empty());
  EXPECT_EQ(s.strategy.rebalances, 0);
  // The hand-off ends; a write is outstanding.
  EXPECT_TRUE(s.h.c.handle(handoff_deleted{102, 6}).empty());
  const auto creates = only<write_allocations>(s.h.ask(7));
  ASSERT_EQ(creates.size(), 1U);
  EXPECT_TRUE(s.h.c.handle(tick{t0 + 20s}).empty());
  EXPECT_EQ(s.strategy.rebalances, 0);
  // Nothing runs any more: the next interval rebalances.
  EXPECT_EQ(only<answer_home>(s.h.c.handle(write_committed{creates[0].id, 103})).size(), 1U);
  EXPECT_TRUE(s.h.c.handle(tick{t0 + 25s}).empty()) << "once per interval";
  EXPECT_EQ(only<begin_handoffs>(s.h.c.handle(tick{t0 + 30s})).size(), 1U);
  EXPECT_EQ(s.strategy.rebalances, 1);
}

TEST(Coordinator, RebalancesOnRequestAtTheNextTickThatCanRunARoundWhateverTheInterval) {
  coordinator_settings settings;
  settings.rebalance_interval = 1h;
  settings.handoff_timeout = 24h;
  scripted s({5}, {id("b")}, settings);
  EXPECT_TRUE(s.h.start({member("a"), member("b")}, {region("a"), region("b")},
                        {allocation{5, id("a"), 60}, allocation{6, id("a"), 61}},
                        {handoff{6, id("a"), id("b"), 61, 90, false}})
                  .empty());
  EXPECT_TRUE(s.h.c.handle(tick{t0}).empty()) << "the interval's round meets a hand-off";
  // The operator asks; the hand-off still runs, so the request waits for it.
  EXPECT_TRUE(s.h.c.handle(rebalance_requested{}).empty()) << "decided at a tick, not at once";
  EXPECT_TRUE(s.h.c.handle(tick{t0 + 1s}).empty());
  EXPECT_EQ(s.strategy.rebalances, 0);
  EXPECT_TRUE(s.h.c.handle(handoff_deleted{101, 6}).empty());
  const auto begins = only<begin_handoffs>(s.h.c.handle(tick{t0 + 2s}));
  ASSERT_EQ(begins.size(), 1U) << "an hour before the interval's next round";
  EXPECT_EQ(s.strategy.rebalances, 1);
  // The request is spent: once the move ends, no round runs until the interval or another ask.
  EXPECT_TRUE(s.h.c.handle(write_committed{begins[0].id, 130}).empty());
  EXPECT_TRUE(s.h.c.handle(handoff_deleted{131, 5}).empty());
  EXPECT_TRUE(s.h.c.handle(tick{t0 + 3s}).empty());
  EXPECT_EQ(s.strategy.rebalances, 1);
  EXPECT_TRUE(s.h.c.handle(rebalance_requested{}).empty());
  EXPECT_TRUE(s.h.c.handle(tick{t0 + 4s}).empty()) << "the strategy names nothing more";
  EXPECT_EQ(s.strategy.rebalances, 2);
}

TEST(Coordinator, IgnoresARebalanceRequestBeforeItDecides) {
  coordinator_settings settings;
  settings.rebalance_interval = 1h;
  scripted s({}, {id("b")}, settings);
  EXPECT_TRUE(s.h.c.handle(rebalance_requested{}).empty()) << "not elected";
  EXPECT_EQ(s.h.c.handle(elected{coord_key}), decisions{read_state{}});
  EXPECT_TRUE(s.h.c.handle(rebalance_requested{}).empty()) << "elected, the state not read yet";
  EXPECT_TRUE(s.h.c
                  .handle(state_read{100,
                                     {member("a"), member("b")},
                                     {region("a"), region("b")},
                                     {allocation{5, id("a"), 60}},
                                     {}})
                  .empty());
  EXPECT_TRUE(s.h.c.handle(tick{t0}).empty());
  EXPECT_EQ(s.strategy.rebalances, 1) << "a term's first tick runs a round";
  EXPECT_TRUE(s.h.c.handle(tick{t0 + 1s}).empty());
  EXPECT_EQ(s.strategy.rebalances, 1) << "no request was kept for a later tick";
}

TEST(Coordinator, RereadsWhenAHandOffWriteFailsOrItsOutcomeIsUnknown) {
  // Each of begin, commit and abort, failed and unknown: the shard is freed and the state read.
  for (const bool unknown : {false, true}) {
    auto outcome = [&](write_id id) -> coordinator_event {
      if (unknown) {
        return write_unknown{id};
      }
      return write_failed{id};
    };
    {
      scripted s({5});
      s.h.start({member("a"), member("b")}, {region("a"), region("b")},
                {allocation{5, id("a"), 60}});
      const auto begins = only<begin_handoffs>(s.h.c.handle(tick{t0}));
      ASSERT_EQ(begins.size(), 1U);
      EXPECT_EQ(s.h.c.handle(outcome(begins[0].id)), decisions{read_state{}}) << "begin";
      EXPECT_TRUE(s.h.c.shards_in_flight().empty());
      EXPECT_TRUE(s.h.c.handoffs().empty());
    }
    {
      scripted s({5});
      s.begin_moving_shard_5();
      const auto commits = only<commit_handoff>(s.h.c.handle(shard_stopped{140, 5, 130}));
      ASSERT_EQ(commits.size(), 1U);
      EXPECT_EQ(s.h.c.handle(outcome(commits[0].id)), decisions{read_state{}}) << "commit";
      EXPECT_TRUE(s.h.c.shards_in_flight().empty());
      EXPECT_EQ(s.h.c.allocations().at(5), (allocation{5, id("a"), 60}));
      // The read shows what happened: the commit applied after all.
      const auto ds = s.h.c.handle(state_read{160,
                                              {member("a"), member("b")},
                                              {region("a"), region("b")},
                                              {allocation{5, id("b"), 150}},
                                              {}});
      EXPECT_TRUE(ds.empty());
      EXPECT_TRUE(s.h.c.handoffs().empty());
      EXPECT_EQ(s.h.c.allocations().at(5), (allocation{5, id("b"), 150}));
    }
    {
      scripted s({5});
      s.begin_moving_shard_5();
      const auto aborts = only<abort_handoff>(s.h.c.handle(member_deleted{140, id("a")}));
      ASSERT_EQ(aborts.size(), 1U);
      EXPECT_EQ(s.h.c.handle(outcome(aborts[0].id)), decisions{read_state{}}) << "abort";
      EXPECT_TRUE(s.h.c.shards_in_flight().empty());
      EXPECT_TRUE(only<write_allocations>(s.h.c.handle(tick{t0 + 1h})).empty())
          << "no move until the read shows the hand-off gone";
    }
  }
}

TEST(Coordinator, ADeposedCoordinatorForgetsItsHandOffs) {
  coordinator_settings settings;
  settings.handoff_timeout = 10s;
  scripted s({5}, {id("b")}, settings);
  const auto h = s.begin_moving_shard_5();
  const auto commits = only<commit_handoff>(s.h.c.handle(shard_stopped{140, 5, 130}));
  ASSERT_EQ(commits.size(), 1U);
  EXPECT_TRUE(s.h.c.handle(deposed{}).empty());
  EXPECT_TRUE(s.h.c.handoffs().empty());
  EXPECT_TRUE(s.h.c.shards_in_flight().empty());
  EXPECT_TRUE(s.h.c.handle(write_committed{commits[0].id, 150}).empty());
  // Elected again an hour later: the hand-off (not stopped, as this read says) is new to this
  // term, so its timeout runs from the term's first tick, not from the last term's time.
  EXPECT_EQ(s.h.c.handle(elected{coord_key + 1}), decisions{read_state{}});
  EXPECT_TRUE(s.h.c
                  .handle(state_read{200,
                                     {member("a"), member("b")},
                                     {region("a"), region("b")},
                                     {allocation{5, id("a"), 60}},
                                     {h}})
                  .empty());
  EXPECT_TRUE(s.h.c.handle(tick{t0 + 1h}).empty());
  EXPECT_EQ(only<abort_handoff>(s.h.c.handle(tick{t0 + 1h + 10s})).size(), 1U);
}

TEST(Coordinator, CommitsAtOnceAHandOffTheReadShowsStopped) {
  harness h;
  const auto ds =
      h.start({member("a"), member("b")}, {region("a"), region("b")}, {allocation{5, id("a"), 60}},
              {handoff{5, id("a"), id("b"), 60, 90, true}});
  const auto commits = only<commit_handoff>(ds);
  ASSERT_EQ(commits.size(), 1U);
  EXPECT_EQ(ds, decisions{(commit_handoff{commits[0].id, coord_key, 5, id("b"), 60, 90})});
}

TEST(Coordinator, AbortsAHandOffWhoseAllocationMovedOn) {
  // The commit would compare epoch 50 and fail; re-reading would find the same.
  harness h;
  const auto ds =
      h.start({member("a"), member("b")}, {region("a"), region("b")}, {allocation{5, id("a"), 60}},
              {handoff{5, id("a"), id("b"), 50, 90, true}});
  EXPECT_TRUE(only<commit_handoff>(ds).empty());
  EXPECT_EQ(only<abort_handoff>(ds).size(), 1U);
}

TEST(Coordinator, KeepsOneWritePerShardThroughAHandOff) {
  coordinator_settings settings;
  settings.handoff_timeout = 10s;
  scripted s({5}, {id("b")}, settings);
  s.h.start({member("a"), member("b")}, {region("a"), region("b")}, {allocation{5, id("a"), 60}});
  const auto begins = only<begin_handoffs>(s.h.c.handle(tick{t0}));
  ASSERT_EQ(begins.size(), 1U);
  // While the begin is out: a leave, an ask and ticks decide nothing more for shard 5.
  EXPECT_TRUE(s.h.c.handle(member_put{101, leaving("a")}).empty());
  EXPECT_TRUE(s.h.ask(5).empty());
  EXPECT_TRUE(s.h.c.handle(tick{t0 + 1h}).empty());
  // The watch brings the hand-off and its stop before the begin's outcome.
  EXPECT_TRUE(s.h.c.handle(handoff_put{handoff{5, id("a"), id("b"), 60, 130, false}}).empty());
  EXPECT_TRUE(s.h.c.handle(shard_stopped{131, 5, 130}).empty());
  const auto commits = only<commit_handoff>(s.h.c.handle(write_committed{begins[0].id, 130}));
  ASSERT_EQ(commits.size(), 1U) << "the stop the watch brought counts";
  // While the commit is out: a second stop, the timeout and the owner's death decide nothing.
  EXPECT_TRUE(s.h.c.handle(shard_stopped{132, 5, 130}).empty());
  EXPECT_TRUE(s.h.c.handle(tick{t0 + 2h}).empty());
  EXPECT_TRUE(s.h.c.handle(member_deleted{133, id("a")}).empty());
  EXPECT_EQ(s.h.c.shards_in_flight(), std::vector<shard_id>{5});
  EXPECT_EQ(s.h.c.handle(write_committed{commits[0].id, 140}),
            decisions{(answer_home{id("b"), 5, id("b"), 140})});
}

TEST(Coordinator, KeepsAHandOffBegunAfterTheReadThatFollowsIt) {
  scripted s({5});
  s.h.start({member("a"), member("b")}, {region("a"), region("b")}, {allocation{5, id("a"), 60}});
  const auto begins = only<begin_handoffs>(s.h.c.handle(tick{t0}));
  ASSERT_EQ(begins.size(), 1U);
  const auto creates = only<write_allocations>(s.h.ask(7));
  ASSERT_EQ(creates.size(), 1U);
  EXPECT_EQ(s.h.c.handle(write_failed{creates[0].id}), decisions{read_state{}});
  // The begin lands at 130, after the read (taken at 120) that does not show it.
  EXPECT_TRUE(s.h.c.handle(write_committed{begins[0].id, 130}).empty());
  const auto ds = s.h.c.handle(state_read{120,
                                          {member("a"), member("b")},
                                          {region("a"), region("b")},
                                          {allocation{5, id("a"), 60}},
                                          {}});
  EXPECT_EQ(ds,
            decisions{(write_allocations{
                creates[0].id + 1, coord_key, {allocation_write{7, id("b"), 0}}, std::nullopt})})
      << "only shard 7 is written again";
  EXPECT_EQ(s.h.c.handoffs().at(5), (handoff{5, id("a"), id("b"), 60, 130, false}));
  EXPECT_EQ(only<commit_handoff>(s.h.c.handle(shard_stopped{131, 5, 130})).size(), 1U);
}

TEST(Coordinator, AReadDoesNotBringBackAHandOffThatEndedAfterIt) {
  scripted s({5, 6});
  s.h.start({member("a"), member("b")}, {region("a"), region("b")},
            {allocation{5, id("a"), 60}, allocation{6, id("a"), 61}});
  const auto begins = only<begin_handoffs>(s.h.c.handle(tick{t0}));
  ASSERT_EQ(begins.size(), 1U);
  EXPECT_TRUE(s.h.c.handle(write_committed{begins[0].id, 130}).empty());
  const auto commits = only<commit_handoff>(s.h.c.handle(shard_stopped{131, 5, 130}));
  ASSERT_EQ(commits.size(), 1U);
  // Another write fails, so a read (taken at 140) is on its way when the commit lands at 150.
  const auto creates = only<write_allocations>(s.h.ask(7));
  ASSERT_EQ(creates.size(), 1U);
  EXPECT_EQ(s.h.c.handle(write_failed{creates[0].id}), decisions{read_state{}});
  EXPECT_TRUE(s.h.c.handle(write_committed{commits[0].id, 150}).empty());
  const auto ds = s.h.c.handle(state_read{
      140,
      {member("a"), member("b")},
      {region("a"), region("b")},
      {allocation{5, id("a"), 60}, allocation{6, id("a"), 61}},
      {handoff{5, id("a"), id("b"), 60, 130, true}, handoff{6, id("a"), id("b"), 61, 130, false}}});
  EXPECT_TRUE(only<commit_handoff>(ds).empty());
  EXPECT_TRUE(only<abort_handoff>(ds).empty());
  EXPECT_EQ(only<write_allocations>(ds).size(), 1U) << "shard 7, created again";
  EXPECT_FALSE(s.h.c.handoffs().contains(5));
  EXPECT_EQ(s.h.c.allocations().at(5), (allocation{5, id("b"), 150}));
  EXPECT_EQ(s.h.c.handoffs().at(6), (handoff{6, id("a"), id("b"), 61, 130, false}));
  // A later hand-off of shard 5, from the watch, is a new one.
  EXPECT_TRUE(s.h.c.handle(handoff_put{handoff{5, id("b"), id("a"), 150, 160, false}}).empty());
  EXPECT_EQ(s.h.c.handoffs().at(5).revision, 160);
}

}  // namespace
}  // namespace troupe::sharding::coordination
