// Memory per idle entity with 36-character ids (UUID text), the length of real ids: past the
// 15 bytes std::string keeps inline, so every copy of an id costs a heap block.
//
//   bytes_per_idle_entity_uuid  1 M entities, one message each, ids like
//                               "1b4e28ba-2fa1-11d2-883f-0016d3cca427": RSS growth per entity
//                               after purging the allocator's free pages (target <= 320 B);
//                               its params also give the growth without the purge (steady
//                               state) and jemalloc's allocated bytes per entity.
//
// With TROUPE_BENCH_HEAP=1 in the environment a run also prints to stderr, per allocator size
// class, how many live blocks each entity added: where the bytes go.

#include "sharding_memory.hpp"

#include <troupe/core/actor_system.hpp>
#include <troupe/sharding/cluster_sharding.hpp>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>

namespace troupe::bench::sharding_memory {

namespace {

using namespace std::chrono_literals;

/// One message for one entity; the extractor reads `id`.
struct visit {
  std::string id;
};

/// Counts its first message down, then idles.
class idle_entity final : public troupe::actor<visit> {
 public:
  explicit idle_entity(countdown* got) : got_(got) {}

 private:
  void receive(visit& /*unused*/) override {
    if (!seen_) got_->count_down();
    seen_ = true;
  }
  countdown* got_;
  bool seen_ = false;
};

/// A 36-character id in UUID form, distinct for each n (splitmix64 of n, then n itself in the
/// last group), so that ids share no prefix a container could exploit.
std::string uuid_of(std::uint64_t n) {
  std::uint64_t z = n + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
  z ^= z >> 31U;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(z >> 32U),
                static_cast<unsigned>((z >> 16U) & 0xFFFFU), static_cast<unsigned>(z & 0xFFFFU),
                static_cast<unsigned>(n & 0xFFFFU), static_cast<unsigned long long>(n));
  return buf;
}

/// Waits until the region counts `expected` active entities (it hears of starts from its shards
/// asynchronously), so that no report is in flight when the run reads memory.
void settle(troupe::actor_system& system, const std::string& type, std::size_t expected) {
  auto& sharding = troupe::sharding::cluster_sharding::get(system);
  const auto deadline = steady::now() + wait_limit;
  std::size_t active = 0;
  while (steady::now() < deadline) {
    active = 0;
    for (const auto& s : sharding.shards(type, wait_limit)) active += s.entity_count;
    if (active == expected) return;
    std::this_thread::sleep_for(1ms);
  }
  throw bench_failure("the region counts " + std::to_string(active) +
                      " active entities, expected " + std::to_string(expected));
}

/// Per size class, the live blocks each entity added (TROUPE_BENCH_HEAP=1), to stderr.
void print_heap_growth(const std::vector<std::pair<std::size_t, std::int64_t>>& before,
                       const std::vector<std::pair<std::size_t, std::int64_t>>& after,
                       std::int64_t entities) {
  if (before.size() != after.size() || before.empty()) {
    std::fprintf(stderr, "heap: no per-size-class counts (the allocator is not jemalloc)\n");
    return;
  }
  double bytes = 0;
  std::fprintf(stderr, "heap: live blocks added per entity, by size class:");
  for (std::size_t j = 0; j < after.size(); ++j) {
    const double per =
        static_cast<double>(after[j].second - before[j].second) / static_cast<double>(entities);
    if (per < 0.01 && per > -0.01) continue;
    bytes += per * static_cast<double>(after[j].first);
    std::fprintf(stderr, " %zu B x %.2f;", after[j].first, per);
  }
  std::fprintf(stderr, " = %.1f B in small blocks\n", bytes);
}

run_result run(std::size_t workers, std::int64_t entities) {
  troupe::actor_system system(bench_config(workers));
  std::vector<std::string> ids;
  ids.reserve(static_cast<std::size_t>(entities));
  for (std::int64_t i = 0; i < entities; ++i) ids.push_back(uuid_of(static_cast<std::uint64_t>(i)));
  countdown got(entities);
  auto region = troupe::sharding::cluster_sharding::get(system).start(
      troupe::sharding::sharding_options<visit>::create()
          .with_type_name("uuid")
          .with_entity<idle_entity>(&got)
          .with_extract_entity_id([](const visit& v) { return v.id; }));
  const bool heap = std::getenv("TROUPE_BENCH_HEAP") != nullptr;

  const memory_use before = settled_memory();  // let the workers settle (spin, then park)
  const auto heap_before =
      heap ? small_allocations_by_size() : decltype(small_allocations_by_size()){};
  for (const auto& id : ids) region.tell(visit{id});
  got.wait("every entity to handle its first message");
  settle(system, "uuid", static_cast<std::size_t>(entities));
  const memory_use after = settled_memory();  // the last turns end
  if (heap) print_heap_growth(heap_before, small_allocations_by_size(), entities);

  region = {};
  const double teardown = shut_down(system);
  check(got.left() == 0, "an entity counted its first message twice");
  const auto n = static_cast<double>(entities);
  run_result out;
  out.value = static_cast<double>(after.resident - before.resident) / n;
  check(out.value > 0, "RSS did not grow while activating");
  out.extras.emplace_back("unpurged_bytes_per_entity",
                          static_cast<double>(after.unpurged_resident - before.resident) / n);
  if (before.allocated >= 0 && after.allocated >= 0) {
    out.extras.emplace_back("allocated_bytes_per_entity",
                            static_cast<double>(after.allocated - before.allocated) / n);
  }
  out.extras.emplace_back("teardown_s", teardown);
  return out;
}

}  // namespace

std::vector<bench_case> cases(std::int64_t shrink) {
  const std::int64_t million = 1'000'000 / shrink;
  std::vector<bench_case> out;
  out.push_back(
      {"bytes_per_idle_entity_uuid",
       "bytes",
       "<= 320",
       at_most(320),
       {{"entities", str(million)},
        {"shards", "64"},
        {"id", json_string("36 characters, UUID text: " + uuid_of(0))},
        {"passivation", json_string("default: 5 min idle")},
        {"measure", json_string("RSS growth (/proc/self/statm) / entities after purging the "
                                "allocator's free pages, sharding bookkeeping included")},
        {"unpurged", json_string("unpurged_bytes_per_entity: the same without the purge "
                                 "(steady state)")}},
       [=](std::size_t w) { return run(w, million); }});
  return out;
}

}  // namespace troupe::bench::sharding_memory
