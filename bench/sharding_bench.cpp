// Sharding benchmarks on one node: tells through a region to active entities, activating
// entities, memory per idle entity, activation/passivation churn under an LRU cap, and what
// exporting metrics (sharding_metrics, scraped every 100 ms) costs local_tell.
//
//   troupe_bench_sharding [--case NAME[,NAME...]]... [--runs N] [--workers N] [--json-only]
//   [--list]
//
// Prints one JSON line per case on stdout,
//   {"bench":"sharding","case":"local_tell","value":3.1e6,"unit":"msgs/s","runs":[...],"params":{...}}
// (value is the median of the runs), then a table of all cases unless --json-only. Every run
// uses a fresh actor_system, checks its own result (messages per entity id, activations, no dead
// letters, a clean shutdown) and the program exits non-zero when any check fails.
// `--benchmark_filter=REGEX` is accepted as well and selects cases by name. `--shrink K` divides
// every size by K, for profiling (e.g. `valgrind --tool=callgrind ... --shrink 50 --runs 1`).

#include <troupe/core/actor_system.hpp>
#include <troupe/core/metrics.hpp>
#include <troupe/observability/prometheus_text.hpp>
#include <troupe/observability/sharding_metrics.hpp>
#include <troupe/sharding/cluster_sharding.hpp>

#include "bench_support.hpp"
#include "sharding_memory.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <thread>

namespace {

using namespace std::chrono_literals;
using namespace troupe::bench;

// -- the sharded type ---------------------------------------------------------------------------

/// One message for one entity; the extractor reads `id`.
struct hit {
  std::string id;
};

std::string id_of(const hit& h) { return h.id; }

/// "e" + n for n in [0, count).
std::vector<std::string> make_ids(char prefix, std::int64_t count) {
  std::vector<std::string> ids;
  ids.reserve(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) ids.push_back(prefix + std::to_string(i));
  return ids;
}

/// The index n of an id "<letter><n>".
std::size_t index_of(const std::string& id) {
  std::size_t n = 0;
  std::from_chars(id.data() + 1, id.data() + id.size(), n);
  return n;
}

/// What the entities of one run report to.
struct tallies {
  explicit tallies(std::size_t entities) : handled(entities) {}
  /// Messages handled per entity id (summed over incarnations).
  std::vector<std::atomic<std::int64_t>> handled;
  /// Incarnations started.
  std::atomic<std::int64_t> activations{0};
  /// Counted down once per handled message (when set).
  countdown* each_message = nullptr;
  /// An entity whose own count reaches first_at counts `first` down; at last_at, `last`.
  std::int64_t first_at = 0;
  countdown* first = nullptr;
  std::int64_t last_at = 0;
  countdown* last = nullptr;
};

/// Counts what it receives, per id, in the shared tallies.
class counter_entity final : public troupe::actor<hit> {
 public:
  explicit counter_entity(tallies* t) : tallies_(t), index_(index_of(entity_id())) {
    tallies_->activations.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  void receive(hit& /*unused*/) override {
    const auto n = tallies_->handled[index_].fetch_add(1, std::memory_order_relaxed) + 1;
    if (tallies_->each_message != nullptr) tallies_->each_message->count_down();
    if (n == tallies_->first_at && tallies_->first != nullptr) tallies_->first->count_down();
    if (n == tallies_->last_at && tallies_->last != nullptr) tallies_->last->count_down();
  }

  tallies* tallies_;
  std::size_t index_;
};

/// Checks that every entity handled exactly `expected` messages.
void check_counts(const tallies& t, std::int64_t expected) {
  for (std::size_t i = 0; i < t.handled.size(); ++i) {
    const auto got = t.handled[i].load(std::memory_order_relaxed);
    if (got != expected) {
      throw bench_failure("entity " + std::to_string(i) + " handled " + std::to_string(got) +
                          " messages, expected " + std::to_string(expected));
    }
  }
}

/// Waits until the region of `type` counts `expected` active entities (it hears of starts and
/// stops from its shards asynchronously), so that no report is in flight when the run measures
/// memory or shuts down. Throws bench_failure when the count does not settle.
void settle(troupe::actor_system& system, const std::string& type, std::size_t expected) {
  auto& sharding = troupe::sharding::cluster_sharding::get(system);
  const auto deadline = steady::now() + wait_limit;
  std::size_t active = 0;
  while (true) {
    active = 0;
    for (const auto& s : sharding.shards(type, wait_limit)) active += s.entity_count;
    if (active == expected) return;
    if (steady::now() > deadline) break;
    std::this_thread::sleep_for(1ms);
  }
  throw bench_failure("the region counts " + std::to_string(active) +
                      " active entities, expected " + std::to_string(expected));
}

/// The number of active entities the region of `type` counts once that number stops changing
/// (unchanged over 50 ms).
std::size_t settled_count(troupe::actor_system& system, const std::string& type) {
  auto& sharding = troupe::sharding::cluster_sharding::get(system);
  auto count = [&] {
    std::size_t active = 0;
    for (const auto& s : sharding.shards(type, wait_limit)) active += s.entity_count;
    return active;
  };
  std::size_t last = count();
  for (const auto deadline = steady::now() + wait_limit; steady::now() < deadline;) {
    std::this_thread::sleep_for(50ms);
    const std::size_t now = count();
    if (now == last) return now;
    last = now;
  }
  throw bench_failure("the region's count of active entities never settled");
}

// -- local_tell ---------------------------------------------------------------------------------

namespace local_tell {

/// With `metrics`, the node's sharding figures are exported (sharding_metrics) and a scraper
/// thread reads them as Prometheus text every 100 ms while the tells run: the metrics case.
run_result run(std::size_t workers, std::int64_t entities, std::int64_t messages,
               bool metrics = false) {
  check(messages % entities == 0, "messages must be a multiple of entities");
  troupe::actor_system system(bench_config(workers));
  const auto ids = make_ids('e', entities);
  tallies t(static_cast<std::size_t>(entities));
  countdown warm(entities);
  countdown done(entities);
  t.first_at = 1;
  t.first = &warm;
  t.last_at = 1 + messages / entities;
  t.last = &done;
  auto region = troupe::sharding::cluster_sharding::get(system).start(
      troupe::sharding::sharding_options<hit>::create()
          .with_type_name("counter")
          .with_entity<counter_entity>(&t)
          .with_extract_entity_id(id_of)
          .with_passivation_idle(0s));

  // Warm-up: activate every entity before the clock starts.
  for (const auto& id : ids) region.tell(hit{id});
  warm.wait("every entity to activate");

  auto registry = std::make_shared<troupe::metrics_registry>();
  std::optional<troupe::observability::sharding_metrics> exported;
  std::jthread scraper;
  std::size_t scrapes = 0;
  if (metrics) {
    // What observe_node does: the copied figures, and the runtime's own hot-path histograms
    // (ask durations, the shards' sampled queue waits).
    system.record_metrics(registry);
    exported.emplace(*registry, troupe::sharding::cluster_sharding::get(system), system);
    scraper = std::jthread([&](std::stop_token stop) {
      while (!stop.stop_requested()) {
        const std::string text = troupe::observability::to_prometheus_text(registry->collect());
        check(!text.empty(), "a scrape gave no text");
        ++scrapes;
        std::this_thread::sleep_for(100ms);
      }
    });
  }

  const auto start = steady::now();
  for (std::int64_t i = 0; i < messages; ++i) {
    region.tell(hit{ids[static_cast<std::size_t>(i % entities)]});
  }
  const auto end = done.wait("every entity to count its messages");
  const double seconds = seconds_between(start, end);
  if (metrics) {
    scraper.request_stop();
    scraper.join();
    exported.reset();
    system.record_metrics(nullptr);
  }
  settle(system, "counter", static_cast<std::size_t>(entities));

  region = {};
  const double teardown = shut_down(system);
  check_counts(t, 1 + messages / entities);
  check(t.activations.load() == entities, "entities were activated " +
                                              std::to_string(t.activations.load()) +
                                              " times, expected " + std::to_string(entities));
  return {static_cast<double>(messages) / seconds,
          {{"teardown_s", teardown}, {"scrapes", static_cast<double>(scrapes)}}};
}

/// The fraction of local_tell's throughput that exporting metrics costs: a run without, then
/// one with, on fresh systems; the runs' median is the case's value.
run_result metrics_overhead(std::size_t workers, std::int64_t entities, std::int64_t messages) {
  const double off = run(workers, entities, messages, false).value;
  const auto on = run(workers, entities, messages, true);
  return {(off - on.value) / off,
          {{"metrics_off_msgs_per_s", off},
           {"metrics_on_msgs_per_s", on.value},
           {"scrapes", on.extras.back().second}}};
}

}  // namespace local_tell

// -- activation, bytes_per_idle_entity ----------------------------------------------------------

namespace activation {

/// Sends one message to each of `entities` new ids (default options: 64 shards, passivation
/// after 5 minutes idle, so the policy tracks every entity) and waits until all have handled it.
run_result run(std::size_t workers, std::int64_t entities, bool measure_memory) {
  troupe::actor_system system(bench_config(workers));
  const auto ids = make_ids('a', entities);
  tallies t(static_cast<std::size_t>(entities));
  countdown done(entities);
  t.first_at = 1;
  t.first = &done;
  auto region = troupe::sharding::cluster_sharding::get(system).start(
      troupe::sharding::sharding_options<hit>::create()
          .with_type_name("counter")
          .with_entity<counter_entity>(&t)
          .with_extract_entity_id(id_of));

  const memory_use before = settled_memory();  // let the workers settle (spin, then park)

  const auto start = steady::now();
  for (const auto& id : ids) region.tell(hit{id});
  const auto end = done.wait("every entity to handle its first message");
  const double seconds = seconds_between(start, end);
  settle(system, "counter", static_cast<std::size_t>(entities));

  const memory_use after = settled_memory();  // the last turns end

  region = {};
  const double teardown = shut_down(system);
  check_counts(t, 1);
  check(t.activations.load() == entities, "entities were activated " +
                                              std::to_string(t.activations.load()) +
                                              " times, expected " + std::to_string(entities));
  const auto n = static_cast<double>(entities);
  run_result out;
  if (measure_memory) {
    out.value = static_cast<double>(after.resident - before.resident) / n;
    check(out.value > 0, "RSS did not grow while activating");
    out.extras.emplace_back("unpurged_bytes_per_entity",
                            static_cast<double>(after.unpurged_resident - before.resident) / n);
    if (before.allocated >= 0 && after.allocated >= 0) {
      out.extras.emplace_back("allocated_bytes_per_entity",
                              static_cast<double>(after.allocated - before.allocated) / n);
    }
  } else {
    out.value = n / seconds;
  }
  out.extras.emplace_back("teardown_s", teardown);
  return out;
}

}  // namespace activation

// -- passivation_churn --------------------------------------------------------------------------

namespace churn {

/// Message i goes to id "p<i % window>"; at most `max_entities` are active, so (with a window
/// larger than the cap) a message finds its entity passivated and the LRU cap passivates another.
/// With a window only a little larger than the cap, an id comes back soon after the cap
/// passivated it, often while its entity is still stopping: the message waits in the shard and
/// starts the next incarnation, with whatever else waited. The run fails when more than
/// `max_entities` entities are left running, or when the ids were not started again.
run_result run(std::size_t workers, std::int64_t window, std::int64_t messages,
               std::size_t max_entities) {
  check(messages % window == 0, "messages must be a multiple of the window");
  troupe::actor_system system(bench_config(workers));
  const auto ids = make_ids('p', window);
  tallies t(static_cast<std::size_t>(window));
  countdown done(messages);
  t.each_message = &done;
  auto region = troupe::sharding::cluster_sharding::get(system).start(
      troupe::sharding::sharding_options<hit>::create()
          .with_type_name("churn")
          .with_entity<counter_entity>(&t)
          .with_extract_entity_id(id_of)
          .with_passivation_idle(0s)
          .with_max_entities(max_entities));

  const auto start = steady::now();
  for (std::int64_t i = 0; i < messages; ++i) {
    region.tell(hit{ids[static_cast<std::size_t>(i % window)]});
  }
  const auto end = done.wait("every message to be handled");
  const double seconds = seconds_between(start, end);
  const auto activations = t.activations.load();
  const std::size_t active_after = settled_count(system, "churn");
  check(active_after <= max_entities, std::to_string(active_after) +
                                          " entities left running, more than max-entities " +
                                          std::to_string(max_entities));

  region = {};
  const double teardown = shut_down(system);
  check_counts(t, messages / window);  // every message handled exactly once
  // A message for an entity still stopping waits in its shard and starts the next incarnation,
  // which gets every message that waited: fewer activations than messages once stops lag
  // behind the sender. Churn still means each id started again, at least once per round.
  const std::int64_t rounds = messages / window;
  check(activations >= window + (rounds - 1) && activations <= messages,
        std::to_string(activations) + " activations for " + std::to_string(messages) +
            " messages over " + std::to_string(window) + " ids: the cap did not churn them");
  return {static_cast<double>(activations) / seconds,
          {{"activations", static_cast<double>(activations)},
           {"messages_per_activation",
            static_cast<double>(messages) / static_cast<double>(activations)},
           {"active_after_run", static_cast<double>(active_after)},
           {"teardown_s", teardown}}};
}

}  // namespace churn

/// The cases; every size is divided by `shrink` (--shrink, for profiling under valgrind).
std::vector<bench_case> all_cases(std::int64_t shrink) {
  const std::int64_t million = 1'000'000 / shrink;
  const std::int64_t entities = 10'000 / shrink;
  const auto cap = static_cast<std::size_t>(std::max<std::int64_t>(1, 1000 / shrink));
  // Each id comes back cap / 4 messages after the cap passivated it.
  const std::int64_t window = static_cast<std::int64_t>(cap) +
                              std::max<std::int64_t>(1, static_cast<std::int64_t>(cap) / 4);
  const std::int64_t churn_messages = 160 * window;
  std::vector<bench_case> cases;

  cases.push_back({"local_tell",
                   "msgs/s",
                   ">= 3 M",
                   at_least(3e6),
                   {{"entities", str(entities)},
                    {"messages", str(million)},
                    {"order", json_string("round-robin over e0, e1, ...")},
                    {"passivation", json_string("off")},
                    {"sent_by", json_string("one non-actor thread, through the region ref")},
                    {"timed", json_string("after every entity is active, until all counted")}},
                   [=](std::size_t w) { return local_tell::run(w, entities, million); }});
  cases.push_back(
      {"metrics_overhead",
       "fraction",
       "<= 0.03",
       at_most(0.03),
       {{"entities", str(entities)},
        {"messages", str(million)},
        {"metrics", json_string("sharding_metrics and the system's record_metrics on a registry, "
                                "scraped as Prometheus text every 100 ms by another thread")},
        {"value", json_string("1 - local_tell with metrics / local_tell without, same run")}},
       [=](std::size_t w) { return local_tell::metrics_overhead(w, entities, million); }});
  cases.push_back(
      {"activation",
       "activations/s",
       ">= 1 M",
       at_least(1e6),
       {{"entities", str(million)},
        {"shards", "64"},
        {"passivation", json_string("default: 5 min idle")},
        {"timed", json_string("from the first tell until every entity handled its message")}},
       [=](std::size_t w) { return activation::run(w, million, false); }});
  cases.push_back({"bytes_per_idle_entity",
                   "bytes",
                   "<= 300",
                   at_most(300),
                   {{"entities", str(million)},
                    {"shards", "64"},
                    {"passivation", json_string("default: 5 min idle")},
                    {"measure", json_string("RSS growth (/proc/self/statm) / entities, sharding "
                                            "bookkeeping included")}},
                   [=](std::size_t w) { return activation::run(w, million, true); }});
  cases.push_back({"passivation_churn",
                   "activations/s",
                   "",
                   nullptr,
                   {{"window", str(window)},
                    {"messages", str(churn_messages)},
                    {"max_entities", str(static_cast<std::int64_t>(cap))},
                    {"order", json_string("round-robin: each id again window - cap messages "
                                          "after the cap passivated it")},
                    {"passivation", json_string("LRU cap only (idle off)")},
                    {"checked", json_string("every message handled once; at most max_entities "
                                            "left running; entities started again")},
                    {"timed", json_string("from the first tell until every message handled")}},
                   [=](std::size_t w) { return churn::run(w, window, churn_messages, cap); }});
  // bytes_per_idle_entity_uuid (sharding_memory.cpp).
  for (auto& c : troupe::bench::sharding_memory::cases(shrink)) cases.push_back(std::move(c));
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  return troupe::bench::run_benchmarks(
      argc, argv,
      {"sharding",
       {{"--shrink", "K", 1, 10'000}},
       [](const std::vector<std::int64_t>& flags) { return all_cases(flags[0]); },
       13,
       8});
}
