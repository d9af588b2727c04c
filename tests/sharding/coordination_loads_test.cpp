// The coordinator hands the regions' load reports to its strategy: each shard's rate from its
// owner's report, stale reports of other regions only where the owner has none, nothing from a
// member that is gone or from an earlier term.
#include <troupe/sharding/coordination/coordinator.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace troupe::sharding::coordination {
namespace {

member_id id(std::string node) { return member_id{std::move(node), 1}; }
member_info member(std::string node) { return member_info{id(std::move(node)), {}, false, "1"}; }
region_info region(std::string node) { return region_info{id(std::move(node)), false}; }
allocation owned(shard_id shard, std::string node) {
  return allocation{shard, id(std::move(node)), 50};
}

// Records what the coordinator gives it; places nothing.
class load_spy final : public allocation_strategy {
 public:
  explicit load_spy(std::vector<std::vector<shard_load>>* seen) : seen_(seen) {}
  std::optional<member_id> allocate(shard_id, std::span<const region_view>) override {
    return std::nullopt;
  }
  std::vector<shard_id> rebalance(std::span<const region_view>,
                                  std::span<const shard_id>) override {
    return {};
  }
  void observe_load(std::span<const shard_load> loads) override {
    seen_->emplace_back(loads.begin(), loads.end());
  }

 private:
  std::vector<std::vector<shard_load>>* seen_;
};

struct harness {
  harness() : c({}, std::make_unique<load_spy>(&seen)) {}
  void start(std::vector<load_report> loads = {}) {
    EXPECT_EQ(c.handle(elected{7}), std::vector<coordinator_decision>{read_state{}});
    state_read s{100,
                 {member("a"), member("b")},
                 {region("a"), region("b")},
                 {owned(1, "a"), owned(2, "a"), owned(3, "b")},
                 {}};
    s.loads = std::move(loads);
    EXPECT_TRUE(c.handle(s).empty()) << "the spy places nothing, so nothing is written";
  }
  std::vector<shard_load> last() const {
    return seen.empty() ? std::vector<shard_load>{} : seen.back();
  }
  std::vector<std::vector<shard_load>> seen;
  coordinator c;
};

TEST(CoordinatorLoads, ReportsReadWithTheStateReachTheStrategy) {
  harness h;
  h.start({{id("a"), {{1, 100}, {2, 5}}}, {id("b"), {{3, 40}}}});
  EXPECT_EQ(h.last(), (std::vector<shard_load>{{1, 100}, {2, 5}, {3, 40}}));
}

TEST(CoordinatorLoads, TheOwnersReportWinsOverAStaleOneOfTheShardsLastOwner) {
  harness h;
  h.start({{id("a"), {{1, 100}}}});
  // b still reports shard 1 at a high rate from before it moved to a; a's own report counts.
  (void)h.c.handle(load_reported{{id("b"), {{1, 900}, {3, 40}}}});
  EXPECT_EQ(h.last(), (std::vector<shard_load>{{1, 100}, {3, 40}}));
  // Without the owner's report, the highest other one stands in.
  (void)h.c.handle(load_reported{{id("a"), {}}});
  EXPECT_EQ(h.last(), (std::vector<shard_load>{{1, 900}, {3, 40}}));
}

TEST(CoordinatorLoads, AGoneMembersReportIsDropped) {
  harness h;
  h.start({{id("a"), {{1, 100}}}, {id("b"), {{3, 40}}}});
  (void)h.c.handle(member_deleted{101, id("b")});
  (void)h.c.handle(load_reported{{id("a"), {{1, 120}}}});
  EXPECT_EQ(h.last(), (std::vector<shard_load>{{1, 120}}));
}

TEST(CoordinatorLoads, NothingIsKeptBeforeElectionOrAcrossTerms) {
  harness h;
  (void)h.c.handle(load_reported{{id("a"), {{1, 100}}}});
  EXPECT_TRUE(h.seen.empty()) << "not elected: the report is not kept";
  h.start({{id("a"), {{1, 100}}}});
  (void)h.c.handle(deposed{});
  h.start();  // the next term's read has no reports
  EXPECT_TRUE(h.last().empty());
}

}  // namespace
}  // namespace troupe::sharding::coordination
