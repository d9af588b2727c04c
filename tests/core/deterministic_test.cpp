// testkit::deterministic_system: actors run only inside run()/advance(), on the test's thread,
// in FIFO order, so the same test always sees the same order of events.
#include <troupe/core/actor_system.hpp>
#include <troupe/testkit/deterministic.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

namespace {

using namespace std::chrono_literals;

/// What the actors did, in order, and on which threads. Only the test's thread touches it.
struct journal {
  std::vector<std::string> events;
  std::vector<std::thread::id> threads;

  void add(std::string what) {
    events.push_back(std::move(what));
    threads.push_back(std::this_thread::get_id());
  }
};

struct token {
  int id;
  int hops;
};
struct link {
  troupe::actor_ref<std::variant<token, link, struct later>> next;
};
struct later {
  token t;
  troupe::duration after;
};
using relay_msg = std::variant<token, link, later>;

/// Writes "<name>:<token>:<hops>" for each token and passes it on with one hop less; `later`
/// sends a token to itself by timer.
class relay final : public troupe::actor<relay_msg> {
 public:
  explicit relay(std::shared_ptr<journal> j) : journal_(std::move(j)) {}

 private:
  void receive(relay_msg& msg) override {
    std::visit(troupe::overloaded{
                   [this](token& t) {
                     journal_->add(context().name() + ":" + std::to_string(t.id) + ":" +
                                   std::to_string(t.hops));
                     if (t.hops > 0 && next_) next_.tell(token{t.id, t.hops - 1});
                   },
                   [this](link& l) { next_ = l.next; },
                   [this](later& l) {
                     timers().start_single("later-" + std::to_string(l.t.id), l.t, l.after);
                   },
               },
               msg);
  }

  std::shared_ptr<journal> journal_;
  troupe::actor_ref<relay_msg> next_;
};

TEST(DeterministicSystem, ActorsRunOnlyInsideRunOnTheTestThread) {
  troupe::testkit::deterministic_system ds;
  auto j = std::make_shared<journal>();
  auto r = ds.system().spawn<relay>("r", j);

  r.tell(token{1, 0});
  r.tell(token{2, 0});
  EXPECT_TRUE(j->events.empty());

  EXPECT_GT(ds.run(), 0u);

  EXPECT_EQ(j->events, (std::vector<std::string>{"r:1:0", "r:2:0"}));
  for (const auto& t : j->threads) EXPECT_EQ(t, std::this_thread::get_id());
  EXPECT_EQ(ds.run(), 0u);  // idle
}

TEST(DeterministicSystem, TimersFireOnlyWhenTheTestAdvancesTime) {
  troupe::testkit::deterministic_system ds;
  auto j = std::make_shared<journal>();
  auto r = ds.system().spawn<relay>("r", j);
  r.tell(later{token{1, 0}, 10ms});
  ds.run();

  ds.clock().advance(10ms);  // the timer's message is queued, not handled
  EXPECT_TRUE(j->events.empty());
  EXPECT_GT(ds.run(), 0u);
  EXPECT_EQ(j->events, (std::vector<std::string>{"r:1:0"}));

  r.tell(later{token{2, 0}, 10ms});
  ds.run();
  EXPECT_EQ(ds.advance(9ms), 0u);
  EXPECT_GT(ds.advance(1ms), 0u);  // advance moves time, then runs what fell due
  EXPECT_EQ(j->events.back(), "r:2:0");
}

TEST(DeterministicSystem, RunsActorsInTheOrderTheyBecameReady) {
  troupe::testkit::deterministic_system ds;
  auto j = std::make_shared<journal>();
  auto a = ds.system().spawn<relay>("a", j);
  auto b = ds.system().spawn<relay>("b", j);
  auto c = ds.system().spawn<relay>("c", j);
  a.tell(link{b});
  ds.run();

  b.tell(token{1, 0});
  a.tell(token{2, 1});  // a passes it on to b, which is ready again only after c
  c.tell(token{3, 0});
  a.tell(token{4, 0});  // a's mailbox: handled in a's turn, after token 2

  ds.run();

  EXPECT_EQ(j->events, (std::vector<std::string>{"b:1:0", "a:2:1", "a:4:0", "c:3:0", "b:2:0"}));
}

/// A ring of relays with several tokens in flight and a few timers; returns what happened.
std::vector<std::string> ring_scenario() {
  troupe::testkit::deterministic_system ds;
  auto j = std::make_shared<journal>();
  std::vector<troupe::actor_ref<relay_msg>> ring;
  for (int i = 0; i < 5; ++i) ring.push_back(ds.system().spawn<relay>("r" + std::to_string(i), j));
  for (std::size_t i = 0; i < ring.size(); ++i) ring[i].tell(link{ring[(i + 1) % ring.size()]});
  for (int t = 0; t < 8; ++t) {
    ring[static_cast<std::size_t>(t) % ring.size()].tell(token{t, 20 + t});
    ring[static_cast<std::size_t>(t * 3) % ring.size()].tell(later{token{100 + t, 5}, t * 1ms});
  }
  ds.run();
  for (int step = 0; step < 8; ++step) ds.advance(1ms);
  return j->events;
}

TEST(DeterministicSystem, TheSameScenarioGivesTheSameOrderOfEventsEveryTime) {
  const auto first = ring_scenario();
  const auto second = ring_scenario();

  ASSERT_GT(first.size(), 200u);
  EXPECT_EQ(first, second);
}

}  // namespace
