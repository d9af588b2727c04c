// ctest-labels: concurrency
// A sharded entity with a batch handler: a burst for one key arrives in one turn, in order;
// other keys keep their own order; under light load batches have size 1.
#include <troupe/core/actor_system.hpp>
#include <troupe/core/async_actor.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/testkit/deterministic.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <boost/asio/awaitable.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::sharding::cluster_sharding;
using troupe::sharding::sharding_options;
using troupe::testkit::test_probe;

struct put {
  std::string key;
  int value = 0;
};
std::string key_of(const put& p) { return p.key; }

/// One awaited "write" per batch; reports "<id>: v,v,v" for each batch.
class batch_writer final : public troupe::async_batch_actor<put> {
 public:
  explicit batch_writer(troupe::actor_ref<std::string> out) : out_(std::move(out)) {}

 private:
  boost::asio::awaitable<void> receive_batch(std::vector<troupe::batch_item<put>> batch) override {
    std::string line = entity_id() + ":";
    for (const auto& item : batch) line += " " + std::to_string(item.message.value);
    co_await troupe::sleep_for(1ms);
    out_.tell(line);
  }
  troupe::actor_ref<std::string> out_;
};

TEST(BatchEntity, ABurstForOneKeyIsOneBatchInArrivalOrder) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> out(ds.system(), "out");
  auto writers =
      cluster_sharding::get(ds.system())
          .start<batch_writer>(
              "writer", sharding_options<put>::create().with_extract_entity_id(key_of), out.ref());
  writers.tell(put{"hot", 0});
  ds.run();  // "hot" starts its first write (a batch of one) and awaits it
  for (int v = 1; v <= 50; ++v) writers.tell(put{"hot", v});
  writers.tell(put{"cold", 7});
  ds.advance(1ms);
  std::vector<std::string> lines{out.expect_message(), out.expect_message()};
  ds.advance(1ms);
  lines.push_back(out.expect_message());
  std::string burst;
  for (int v = 1; v <= 50; ++v) burst += " " + std::to_string(v);
  // The first write held one message; the 50 that queued meanwhile went in one batch.
  EXPECT_EQ(lines[0], "hot: 0");
  EXPECT_TRUE(lines[1] == "cold: 7" || lines[2] == "cold: 7");
  EXPECT_TRUE(lines[1] == "hot:" + burst || lines[2] == "hot:" + burst);
}

}  // namespace
