// Plugin-wide contract, for every plugin: data survives reopening, completions run on the
// caller's executor, and concurrent writes are grouped into fewer transactions where the plugin
// promises group commit.
#include "persistence/conformance/store_fixture.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

namespace troupe::persistence::conformance {
namespace {

namespace asio = boost::asio;

struct coroutine_outcome {
  sequence_nr written = 0;
  errc second_append{};
  std::thread::id completed_on;
};

/// Appends, then appends again at the same sequence number (a conflict), as an entity would.
asio::awaitable<void> append_twice(persistence::journal* journal, coroutine_outcome* out) {
  // Requests built before the co_await: GCC 12 rejects a braced string literal inside one.
  append_request first{std::string("p"), 1, {value_of("a")}, 0, std::nullopt};
  append_request again{std::string("p"), 1, {value_of("b")}, 0, std::nullopt};
  out->written = co_await journal->async_append(std::move(first), asio::use_awaitable);
  out->completed_on = std::this_thread::get_id();
  try {
    co_await journal->async_append(std::move(again), asio::use_awaitable);
  } catch (const persistence_error& e) {
    out->second_append = e.value();
  }
}

template <class Factory>
class StorePlugin : public store_test<Factory> {};
TYPED_TEST_SUITE(StorePlugin, all_plugins, plugin_names);

TYPED_TEST(StorePlugin, KeepsEverythingAcrossReopening) {
  this->append("p", 1, {"a", "b"}, 3);
  this->journal().async_delete_to({"p", 1, 3}, use_future).get();
  this->snapshots().async_save({"p", 2, value_of("snap"), 3, std::nullopt}, use_future).get();
  this->states().async_upsert({"s", 0, value_of("state"), 0, std::nullopt}, use_future).get();
  this->remembered().async_update({"cart", 7, {"a", "b"}, {}, 0, std::nullopt}, use_future).get();

  this->reopen();

  EXPECT_EQ(this->read_texts("p"), (std::vector<std::string>{"b"}));
  EXPECT_EQ(this->journal().async_highest_sequence_nr("p", use_future).get(), 2U);
  EXPECT_EQ(text_of(this->snapshots().async_load({"p"}, use_future).get()->state), "snap");
  EXPECT_EQ(this->states().async_get("s", use_future).get()->revision, 1U);
  EXPECT_EQ(this->remembered().async_list({"cart", 7}, use_future).get(),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(error_of(this->journal().async_append({"p", 3, {value_of("x")}, 2, std::nullopt},
                                                  use_future)),
            errc::epoch_fenced);
}

// Remember entities starts a type's regions from this list: shards with ids, of that type only.
TYPED_TEST(StorePlugin, ListsTheShardsThatRememberIds) {
  auto& r = this->remembered();
  r.async_update({"cart", 7, {"a"}, {}, 0, std::nullopt}, use_future).get();
  r.async_update({"cart", 2, {"b", "c"}, {}, 0, std::nullopt}, use_future).get();
  r.async_update({"cart", 9, {"d"}, {}, 0, std::nullopt}, use_future).get();
  r.async_update({"cart", 9, {}, {"d"}, 0, std::nullopt}, use_future).get();  // none left
  r.async_update({"order", 4, {"a"}, {}, 0, std::nullopt}, use_future).get();

  EXPECT_EQ(r.async_list_shards("cart", use_future).get(), (std::vector<std::uint32_t>{2, 7}));
  EXPECT_EQ(r.async_list_shards("order", use_future).get(), (std::vector<std::uint32_t>{4}));
  EXPECT_TRUE(r.async_list_shards("none", use_future).get().empty());
}

TYPED_TEST(StorePlugin, CompletesACoroutineOnItsOwnExecutor) {
  asio::io_context io;
  coroutine_outcome outcome;
  asio::co_spawn(io, append_twice(&this->journal(), &outcome), asio::detached);
  io.run();  // returns once the coroutine finished: pending store calls keep it busy
  EXPECT_EQ(outcome.written, 1U);
  EXPECT_EQ(outcome.second_append, errc::sequence_conflict);
  EXPECT_EQ(outcome.completed_on, std::this_thread::get_id());
}

TYPED_TEST(StorePlugin, GroupsConcurrentWritesIntoFewerTransactions) {
  if (!TypeParam::groups_commits) GTEST_SKIP() << "this plugin commits every write alone";
  constexpr int threads = 4;
  constexpr int per_thread = 50;
  auto before = this->store().stats();
  std::vector<std::thread> writers;
  for (int t = 0; t < threads; ++t) {
    writers.emplace_back([this, t] {
      std::vector<std::future<sequence_nr>> pending;
      for (int i = 0; i < per_thread; ++i) {
        auto pid = "entity-" + std::to_string(t) + "-" + std::to_string(i);
        pending.push_back(
            this->journal().async_append({pid, 1, {value_of("e")}, 0, std::nullopt}, use_future));
      }
      for (auto& f : pending) EXPECT_EQ(f.get(), 1U);
    });
  }
  for (auto& w : writers) w.join();
  auto after = this->store().stats();
  auto writes = after.writes - before.writes;
  auto transactions = after.transactions - before.transactions;
  EXPECT_EQ(writes, std::uint64_t{threads * per_thread});
  // Each commit waits for the disk while the next writes queue up behind it.
  EXPECT_LT(transactions, writes / 2)
      << transactions << " transactions for " << writes << " writes";
  EXPECT_GE(transactions, 1U);
  this->RecordProperty("transactions", std::to_string(transactions));
}

}  // namespace
}  // namespace troupe::persistence::conformance
