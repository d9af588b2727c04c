// ctest-labels: concurrency
#include <troupe/core/actor_system.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>

namespace {

struct ping {
  int n;
};

class echo final : public troupe::actor<ping> {
  void receive(ping& p) override { context().reply(p.n + 1); }
};

TEST(Smoke, AskedActorRepliesThroughTheProbe) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  troupe::testkit::test_probe<int> probe(system);
  auto e = system.spawn<echo>("echo");
  e.tell(ping{41}, probe.untyped());
  EXPECT_EQ(probe.expect_message(), 42);
}

}  // namespace
