// troupe_bench_persistence: the stores under load (issue 5), one JSON line per case, then a table.
//
//   persist        10,000 persistence ids each append 100 events, one at a time (the next once
//                  the previous is durable), all ids at once: events/s and the p99 latency of an
//                  append, with fsync on (the stores' defaults).
//   recover        1,000,000 events already stored (1,000 ids x 1,000): read them all back,
//                  every id's replay at once: events/s.
//   durable_state  10,000 ids each write their state 10 times with a revision check: updates/s.
//   persist_entity, recover_entity: the same through sharded persistent entities (asks, the
//                  codec, recovery after a restart); see persistence_entity_bench.cpp.
//
// Each case runs against SQLite (a fresh file in the system's temp directory, on disk here:
// TMPDIR moves it) and PostgreSQL (a fresh schema per run on the server TROUPE_PG_URL names, or
// else on a throwaway server this program starts and stops with scripts/postgres.sh). Shares the
// flags of the other benchmarks (bench_support.hpp); --shrink K divides the sizes, for profiling.

#include "persistence_bench.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace troupe::bench::persistence {

namespace tp = troupe::persistence;

// -- persist --------------------------------------------------------------------------------------

run_result persist(const store_kind& kind, std::int64_t ids, std::int64_t per_id) {
  scratch_dir dir;
  auto store = kind.open(dir.path());
  const auto total = ids * per_id;
  countdown done(total);
  std::atomic<std::int64_t> failures{0};
  struct writer {
    std::string pid;
    std::uint64_t next = 1;
    steady::time_point sent;
  };
  std::vector<writer> writers(static_cast<std::size_t>(ids));
  std::vector<double> latencies_us;
  latencies_us.reserve(static_cast<std::size_t>(total));
  completion_thread completions;
  const tp::serialized event = event_payload();

  std::function<void(std::size_t)> append_next = [&](std::size_t i) {
    writer& w = writers[i];
    w.sent = steady::now();
    store->journal().async_append(
        tp::append_request{w.pid, w.next, {event}, 0, std::nullopt},
        boost::asio::bind_executor(completions.io(), [&, i](std::exception_ptr e, tp::sequence_nr) {
          writer& me = writers[i];
          latencies_us.push_back(seconds_between(me.sent, steady::now()) * 1e6);
          if (e) failures.fetch_add(1);
          ++me.next;
          const bool more = static_cast<std::int64_t>(me.next) <= per_id && !e;
          done.count_down();
          if (more) append_next(i);
        }));
  };

  const auto start = steady::now();
  for (std::size_t i = 0; i < writers.size(); ++i) {
    writers[i].pid = pid_of(static_cast<std::int64_t>(i));
  }
  boost::asio::post(completions.io(), [&] {
    for (std::size_t i = 0; i < writers.size(); ++i) append_next(i);
  });
  const auto end = done.wait("every append to be durable");
  check(failures.load() == 0, std::to_string(failures.load()) + " appends failed");
  const auto stats = store->stats();
  store.reset();  // joins the store's threads

  std::sort(latencies_us.begin(), latencies_us.end());
  run_result out;
  out.value = static_cast<double>(total) / seconds_between(start, end);
  out.extras.emplace_back("p50_us", percentile(latencies_us, 0.50));
  out.extras.emplace_back("p99_us", percentile(latencies_us, 0.99));
  out.extras.emplace_back("writes_per_transaction",
                          stats.transactions == 0 ? 0.0
                                                  : static_cast<double>(stats.writes) /
                                                        static_cast<double>(stats.transactions));
  return out;
}

namespace {

// -- recover --------------------------------------------------------------------------------------

run_result recover(const store_kind& kind, std::int64_t ids, std::int64_t per_id) {
  scratch_dir dir;
  auto store = kind.open(dir.path());
  completion_thread completions;
  {
    // Fill the journal in big atomic appends (setup, not timed).
    constexpr std::int64_t chunk = 100;
    countdown filled(ids * ((per_id + chunk - 1) / chunk));
    std::atomic<std::int64_t> failures{0};
    const tp::serialized event = event_payload();
    for (std::int64_t i = 0; i < ids; ++i) {
      for (std::int64_t from = 1; from <= per_id; from += chunk) {
        const auto n = std::min(chunk, per_id - from + 1);
        store->journal().async_append(
            tp::append_request{pid_of(i), static_cast<tp::sequence_nr>(from),
                               std::vector<tp::serialized>(static_cast<std::size_t>(n), event), 0,
                               std::nullopt},
            boost::asio::bind_executor(completions.io(),
                                       [&](std::exception_ptr e, tp::sequence_nr) {
                                         if (e) failures.fetch_add(1);
                                         filled.count_down();
                                       }));
      }
    }
    filled.wait("the journal to be filled");
    check(failures.load() == 0, "filling the journal failed");
  }

  countdown replayed(ids);
  std::atomic<std::int64_t> events{0};
  std::atomic<std::int64_t> failures{0};
  const auto start = steady::now();
  for (std::int64_t i = 0; i < ids; ++i) {
    store->journal().async_read(
        tp::read_request{pid_of(i)},
        boost::asio::bind_executor(completions.io(),
                                   [&](std::exception_ptr e, std::vector<tp::event_record> got) {
                                     if (e) failures.fetch_add(1);
                                     events.fetch_add(static_cast<std::int64_t>(got.size()));
                                     replayed.count_down();
                                   }));
  }
  const auto end = replayed.wait("every replay");
  check(failures.load() == 0, "a replay failed");
  check(events.load() == ids * per_id, "replayed " + std::to_string(events.load()) +
                                           " events, expected " + std::to_string(ids * per_id));
  run_result out;
  out.value = static_cast<double>(events.load()) / seconds_between(start, end);
  return out;
}

// -- durable_state --------------------------------------------------------------------------------

run_result durable_state(const store_kind& kind, std::int64_t ids, std::int64_t per_id) {
  scratch_dir dir;
  auto store = kind.open(dir.path());
  completion_thread completions;
  const auto total = ids * per_id;
  countdown done(total);
  std::atomic<std::int64_t> failures{0};
  std::vector<tp::revision_nr> revisions(static_cast<std::size_t>(ids), 0);
  const tp::serialized state = event_payload();

  std::function<void(std::size_t)> write_next = [&](std::size_t i) {
    store->durable_state().async_upsert(
        tp::state_write{pid_of(static_cast<std::int64_t>(i)), revisions[i], state, 0, std::nullopt},
        boost::asio::bind_executor(completions.io(),
                                   [&, i](std::exception_ptr e, tp::revision_nr written) {
                                     if (e) failures.fetch_add(1);
                                     revisions[i] = written;
                                     done.count_down();
                                     if (!e && static_cast<std::int64_t>(written) < per_id)
                                       write_next(i);
                                   }));
  };
  const auto start = steady::now();
  boost::asio::post(completions.io(), [&] {
    for (std::size_t i = 0; i < revisions.size(); ++i) write_next(i);
  });
  const auto end = done.wait("every state write");
  check(failures.load() == 0, std::to_string(failures.load()) + " state writes failed");
  run_result out;
  out.value = static_cast<double>(total) / seconds_between(start, end);
  return out;
}

std::vector<bench_case> all_cases(std::int64_t shrink) {
  const std::int64_t writers = std::max<std::int64_t>(1, 10'000 / shrink);
  const std::int64_t replay_ids = std::max<std::int64_t>(1, 1'000 / shrink);
  std::vector<bench_case> cases;
  for (const store_kind& kind : {sqlite_store(), postgres_store()}) {
    const double persist_target = kind.name == "sqlite" ? 200e3 : 150e3;
    cases.push_back({"persist_" + kind.name,
                     "events/s",
                     kind.name == "sqlite" ? ">= 200 k" : ">= 150 k",
                     at_least(persist_target),
                     {{"store", json_string(kind.name)},
                      {"ids", str(writers)},
                      {"events_per_id", "100"},
                      {"event_bytes", "64"},
                      {"durability", json_string("fsync on every commit")},
                      {"timed", json_string("first append until the last is durable")}},
                     [=](std::size_t) { return persist(kind, writers, 100); }});
    cases.push_back({"recover_" + kind.name,
                     "events/s",
                     ">= 1 M",
                     at_least(1e6),
                     {{"store", json_string(kind.name)},
                      {"ids", str(replay_ids)},
                      {"events_per_id", "1000"},
                      {"timed", json_string("every id's full replay, all at once")}},
                     [=](std::size_t) { return recover(kind, replay_ids, 1000); }});
    cases.push_back({"durable_state_" + kind.name,
                     "updates/s",
                     "",
                     nullptr,
                     {{"store", json_string(kind.name)},
                      {"ids", str(writers)},
                      {"updates_per_id", "10"},
                      {"timed", json_string("each id writes 10 times in turn, all ids at once")}},
                     [=](std::size_t) { return durable_state(kind, writers, 10); }});
    for (auto& c : entity_cases(kind, shrink)) cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace
}  // namespace troupe::bench::persistence

int main(int argc, char** argv) {
  return troupe::bench::run_benchmarks(argc, argv,
                                       {"persistence",
                                        {{"--shrink", "K", 1, 10'000}},
                                        [](const std::vector<std::int64_t>& flags) {
                                          return troupe::bench::persistence::all_cases(flags[0]);
                                        },
                                        10,
                                        11});
}
