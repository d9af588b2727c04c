// Core benchmarks of the actor runtime: message passing, fan-in, spawning, memory per idle actor,
// skynet and 1 ms coroutine timers.
//
//   troupe_bench_core [--case NAME[,NAME...]]... [--runs N] [--workers N] [--json-only] [--list]
//
//   ping_pong_1      one pair, 2 M messages: both players run on ONE worker (the scheduler runs
//                    the receiver of each ball next on the sender's worker), whatever --workers
//   ping_pong_cross  one pair, 1 M messages, the players in two actor systems of one worker
//                    each: every message crosses from one thread (core) to the other
//   bytes_per_idle_actor  RSS growth per actor after purging the allocator's free pages;
//                    unpurged_bytes_per_actor in its params is the same without the purge
//
// Prints one JSON line per case, {"bench":"core","case":"ping_pong_1","value":6.1e6,...}, then a
// table (the driver, flags and exit codes: bench_support.hpp). Every run checks its own result
// (counts, sums, per-sender order, no dead letters, a clean shutdown).

#include <troupe/core/actor_system.hpp>
#include <troupe/core/async_actor.hpp>

#include "bench_support.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <variant>

namespace {

using namespace std::chrono_literals;
using namespace troupe::bench;

// -- ping_pong_1, ping_pong_cross, ping_pong_1000 -------------------------------------------------

namespace pingpong {

struct ball {
  std::int64_t remaining;  // messages still to go, this one included
};
struct meet {
  troupe::untyped_ref partner;
};
using message = std::variant<meet, ball>;

/// One counter per player, on its own cache line.
struct alignas(64) tally {
  std::int64_t handled = 0;
};

class player final : public troupe::actor<message> {
 public:
  player(tally* t, countdown* met, countdown* finished)
      : tally_(t), met_(met), finished_(finished) {}

 private:
  void receive(message& m) override {
    if (auto* b = std::get_if<ball>(&m)) {
      ++tally_->handled;
      if (b->remaining > 1) {
        partner_.tell(ball{b->remaining - 1});
      } else {
        finished_->count_down();
      }
      return;
    }
    partner_ = troupe::actor_ref<message>(std::get<meet>(m).partner.target_ptr());
    met_->count_down();
  }

  tally* tally_;
  countdown* met_;
  countdown* finished_;
  troupe::actor_ref<message> partner_;
};

run_result run(std::size_t workers, std::int64_t pairs, std::int64_t per_pair) {
  troupe::actor_system system(bench_config(workers));
  std::vector<tally> tallies(static_cast<std::size_t>(2 * pairs));
  countdown met(2 * pairs);
  countdown finished(pairs);
  std::vector<troupe::actor_ref<message>> servers;
  servers.reserve(static_cast<std::size_t>(pairs));
  for (std::int64_t i = 0; i < pairs; ++i) {
    auto a = system.spawn<player>({}, &tallies[2 * i], &met, &finished);
    auto b = system.spawn<player>({}, &tallies[2 * i + 1], &met, &finished);
    a.tell(meet{b});
    b.tell(meet{a});
    servers.push_back(std::move(a));
  }
  met.wait("the players to meet");

  const auto start = steady::now();
  for (const auto& a : servers) a.tell(ball{per_pair});
  const auto end = finished.wait("the balls to stop");

  for (std::int64_t i = 0; i < pairs; ++i) {
    const auto got = tallies[2 * i].handled + tallies[2 * i + 1].handled;
    if (got != per_pair) {
      throw bench_failure("pair " + std::to_string(i) + " handled " + std::to_string(got) +
                          " messages, expected " + std::to_string(per_pair));
    }
  }
  servers.clear();
  const double teardown = shut_down(system);
  check(finished.left() == 0 && met.left() == 0, "a player counted more than once");
  return {static_cast<double>(pairs * per_pair) / seconds_between(start, end),
          {{"teardown_s", teardown}}};
}

/// One pair whose players live in two actor systems of one worker each, so that every ball
/// crosses from one worker thread to the other. Within one system the scheduler runs the
/// woken actor next on the sender's own worker (its "next slot": ping_pong_1 never leaves one
/// core), and the core has no public way to pin an actor to a worker; an actor in another system
/// is woken through that system's queue by its own worker (spinning, or parked and woken).
run_result run_cross(std::int64_t per_pair) {
  troupe::actor_system left(bench_config(1).with_name("bench-left"));
  troupe::actor_system right(bench_config(1).with_name("bench-right"));
  std::vector<tally> tallies(2);
  countdown met(2);
  countdown finished(1);
  auto a = left.spawn<player>({}, &tallies[0], &met, &finished);
  auto b = right.spawn<player>({}, &tallies[1], &met, &finished);
  a.tell(meet{b});
  b.tell(meet{a});
  met.wait("the players to meet");

  const auto start = steady::now();
  a.tell(ball{per_pair});
  const auto end = finished.wait("the ball to stop");

  const auto got = tallies[0].handled + tallies[1].handled;
  check(got == per_pair, "the pair handled " + std::to_string(got) + " messages, expected " +
                             std::to_string(per_pair));
  check(tallies[0].handled == (per_pair + 1) / 2 && tallies[1].handled == per_pair / 2,
        "the players did not alternate");
  a = {};
  b = {};
  // Both systems stop before either is destroyed: each player holds a ref into the other.
  const double teardown = shut_down(left) + shut_down(right);
  check(finished.left() == 0 && met.left() == 0, "a player counted more than once");
  return {static_cast<double>(per_pair) / seconds_between(start, end), {{"teardown_s", teardown}}};
}

}  // namespace pingpong

// -- fan_in_4 -----------------------------------------------------------------------------------

namespace fanin {

struct item {
  std::uint32_t sender;
  std::uint32_t seq;  // per sender, from 0: the receiver checks per-sender order
};
struct produce {};

struct shared {
  explicit shared(std::int64_t total) : done(1), total(total) {}
  countdown done;
  const std::int64_t total;
  std::int64_t received = 0;  // written by the receiver, read after shutdown
  bool in_order = true;
};

class receiver final : public troupe::actor<item> {
 public:
  receiver(shared* s, std::uint32_t senders) : shared_(s), next_(senders, 0) {}

 private:
  void receive(item& it) override {
    if (it.sender >= next_.size() || it.seq != next_[it.sender]) shared_->in_order = false;
    if (it.sender < next_.size()) next_[it.sender] = it.seq + 1;
    shared_->received = ++count_;
    if (count_ == shared_->total) shared_->done.count_down();
  }

  shared* shared_;
  std::vector<std::uint32_t> next_;
  std::int64_t count_ = 0;
};

/// Sends `chunk` items per turn, then tells itself to continue, so that it never holds a
/// worker for long.
class sender final : public troupe::actor<produce> {
 public:
  sender(troupe::actor_ref<item> to, std::uint32_t index, std::uint32_t quota, std::uint32_t chunk)
      : to_(std::move(to)), index_(index), quota_(quota), chunk_(chunk) {}

 private:
  void receive(produce& /*unused*/) override {
    const std::uint32_t end = std::min(quota_, sent_ + chunk_);
    for (; sent_ < end; ++sent_) to_.tell(item{index_, sent_});
    if (sent_ < quota_) self().tell(produce{});
  }

  troupe::actor_ref<item> to_;
  std::uint32_t index_;
  std::uint32_t quota_;
  std::uint32_t chunk_;
  std::uint32_t sent_ = 0;
};

run_result run(std::size_t workers, std::uint32_t senders, std::uint32_t per_sender,
               std::uint32_t chunk) {
  troupe::actor_system system(bench_config(workers));
  const std::int64_t total = static_cast<std::int64_t>(senders) * per_sender;
  shared s(total);
  auto sink = system.spawn<receiver>("receiver", &s, senders);
  std::vector<troupe::actor_ref<produce>> producers;
  for (std::uint32_t i = 0; i < senders; ++i) {
    producers.push_back(
        system.spawn<sender>("sender-" + std::to_string(i), sink, i, per_sender, chunk));
  }
  const auto start = steady::now();
  for (const auto& p : producers) p.tell(produce{});
  const auto end = s.done.wait("the receiver to get every item");
  producers.clear();
  sink = {};
  const double teardown = shut_down(system);
  check(s.received == total, "the receiver got " + std::to_string(s.received) +
                                 " items, expected " + std::to_string(total));
  check(s.in_order, "items from one sender arrived out of order");
  return {static_cast<double>(total) / seconds_between(start, end), {{"teardown_s", teardown}}};
}

}  // namespace fanin

// -- spawn, bytes_per_idle_actor ----------------------------------------------------------------

namespace spawning {

/// Waits for one message (spawn) or for nothing at all (bytes_per_idle_actor).
class idle_actor final : public troupe::actor<int> {
 public:
  explicit idle_actor(countdown* got) : got_(got) {}

 private:
  void receive(int& /*unused*/) override { got_->count_down(); }
  countdown* got_;
};

struct spawn_more {};

/// The parent: spawns `total` children via context().spawn, `chunk` per turn.
class spawner final : public troupe::actor<spawn_more> {
 public:
  spawner(std::int64_t total, std::int64_t chunk, countdown* got, countdown* spawned,
          std::vector<troupe::actor_ref<int>>* keep)
      : total_(total), chunk_(chunk), got_(got), spawned_(spawned), keep_(keep) {}

 private:
  void receive(spawn_more& /*unused*/) override {
    const std::int64_t end = std::min(total_, count_ + chunk_);
    for (; count_ < end; ++count_) {
      auto child = context().spawn<idle_actor>({}, got_);
      if (keep_ != nullptr) keep_->push_back(std::move(child));
    }
    if (count_ < total_) {
      self().tell(spawn_more{});
    } else {
      spawned_->count_down();
    }
  }

  std::int64_t total_;
  std::int64_t chunk_;
  std::int64_t count_ = 0;
  countdown* got_;
  countdown* spawned_;
  std::vector<troupe::actor_ref<int>>* keep_;
};

run_result run_spawn(std::size_t workers, std::int64_t total, std::int64_t chunk) {
  troupe::actor_system system(bench_config(workers));
  countdown spawned(1);
  countdown got(total);
  std::vector<troupe::actor_ref<int>> children;
  children.reserve(static_cast<std::size_t>(total));
  auto parent = system.spawn<spawner>("spawner", total, chunk, &got, &spawned, &children);

  const auto start = steady::now();
  parent.tell(spawn_more{});
  const auto end = spawned.wait("the spawner");
  check(
      static_cast<std::int64_t>(children.size()) == total,
      "spawned " + std::to_string(children.size()) + " actors, expected " + std::to_string(total));

  const auto deliver_start = steady::now();
  for (const auto& c : children) c.tell(1);
  const auto delivered = got.wait("every spawned actor to get its message");
  children.clear();
  children.shrink_to_fit();
  parent = {};
  const double teardown = shut_down(system);
  check(got.left() == 0, "an actor got its message twice");
  return {static_cast<double>(total) / seconds_between(start, end),
          {{"deliver_s", seconds_between(deliver_start, delivered)}, {"teardown_s", teardown}}};
}

run_result run_bytes(std::size_t workers, std::int64_t total, std::int64_t chunk) {
  troupe::actor_system system(bench_config(workers));
  countdown spawned(1);
  auto parent = system.spawn<spawner>("spawner", total, chunk, nullptr, &spawned, nullptr);
  const memory_use before = settled_memory();  // let the workers settle (spin, then park)

  parent.tell(spawn_more{});
  spawned.wait("the spawner");
  const memory_use after = settled_memory();  // the spawner's last turn ends

  parent = {};
  const double teardown = shut_down(system);
  const double per_actor =
      static_cast<double>(after.resident - before.resident) / static_cast<double>(total);
  check(per_actor > 0, "RSS did not grow while spawning");
  run_result out{per_actor, {{"teardown_s", teardown}}};
  // The steady-state figure: RSS growth before the purge (from the purged baseline).
  out.extras.emplace_back(
      "unpurged_bytes_per_actor",
      static_cast<double>(after.unpurged_resident - before.resident) / static_cast<double>(total));
  if (before.allocated >= 0 && after.allocated >= 0) {
    out.extras.emplace_back(
        "allocated_bytes_per_actor",
        static_cast<double>(after.allocated - before.allocated) / static_cast<double>(total));
  }
  return out;
}

}  // namespace spawning

// -- skynet -------------------------------------------------------------------------------------

namespace skynet {

constexpr std::int64_t fanout = 10;

struct start {};
using message = std::variant<start, std::int64_t>;

struct result {
  countdown done{1};
  std::int64_t sum = -1;
};

/// A node covering ordinals [num, num + size): a leaf (size 1) reports its ordinal as soon as
/// it exists; an inner node spawns 10 children, sums their 10 reports, reports the sum to its
/// parent and stops (which stops its children, leaves included).
class node final : public troupe::actor<message> {
 public:
  node(troupe::actor_ref<message> parent, result* sink, std::int64_t num, std::int64_t size)
      : parent_(std::move(parent)), sink_(sink), num_(num), size_(size) {}

 private:
  void pre_start() override {
    if (size_ == 1) {
      report(num_);
    } else {
      self().tell(start{});
    }
  }

  void receive(message& m) override {
    if (auto* part = std::get_if<std::int64_t>(&m)) {
      sum_ += *part;
      if (++replies_ == fanout) {
        report(sum_);
        context().stop();
      }
      return;
    }
    const std::int64_t child_size = size_ / fanout;
    for (std::int64_t i = 0; i < fanout; ++i) {
      context().spawn<node>({}, self(), nullptr, num_ + i * child_size, child_size);
    }
  }

  void report(std::int64_t value) {
    if (sink_ != nullptr) {
      sink_->sum = value;
      sink_->done.count_down();
    } else {
      parent_.tell(value);
    }
  }

  troupe::actor_ref<message> parent_;
  result* sink_;
  std::int64_t num_;
  std::int64_t size_;
  std::int64_t sum_ = 0;
  std::int64_t replies_ = 0;
};

run_result run(std::size_t workers, std::int64_t leaves) {
  troupe::actor_system system(bench_config(workers));
  result r;
  const auto start_time = steady::now();
  system.spawn<node>("skynet", troupe::actor_ref<message>{}, &r, std::int64_t{0}, leaves);
  const auto end = r.done.wait("the skynet root");
  const double teardown = shut_down(system);
  const std::int64_t expected = leaves * (leaves - 1) / 2;
  check(r.sum == expected,
        "skynet sum " + std::to_string(r.sum) + ", expected " + std::to_string(expected));
  return {seconds_between(start_time, end), {{"teardown_s", teardown}}};
}

}  // namespace skynet

// -- timer_1ms ----------------------------------------------------------------------------------

namespace timers {

struct shared {
  shared(std::size_t actors, std::size_t per_actor)
      : lateness_us(actors * per_actor, std::numeric_limits<double>::quiet_NaN()),
        per_actor(per_actor),
        done(static_cast<std::int64_t>(actors * per_actor)) {}
  std::vector<double> lateness_us;  // one slot per message, written by its actor
  std::size_t per_actor;
  countdown done;
};

/// Each message: sleep 1 ms in a coroutine handler, then note how late it woke up.
class sleeper final : public troupe::async_actor<int> {
 public:
  sleeper(shared* s, std::size_t index) : shared_(s), index_(index) {}

 private:
  boost::asio::awaitable<void> receive(int seq) override {
    const auto intended = steady::now() + 1ms;
    co_await troupe::sleep_for(1ms);
    const auto woke = steady::now();
    shared_->lateness_us[index_ * shared_->per_actor + static_cast<std::size_t>(seq)] =
        std::chrono::duration<double, std::micro>(woke - intended).count();
    shared_->done.count_down();
  }

  shared* shared_;
  std::size_t index_;
};

run_result run(std::size_t workers, std::size_t actors, std::size_t per_actor) {
  troupe::actor_system system(bench_config(workers));
  shared s(actors, per_actor);
  std::vector<troupe::actor_ref<int>> sleepers;
  sleepers.reserve(actors);
  for (std::size_t i = 0; i < actors; ++i) sleepers.push_back(system.spawn<sleeper>({}, &s, i));

  const auto start = steady::now();
  for (std::size_t seq = 0; seq < per_actor; ++seq) {
    for (const auto& a : sleepers) a.tell(static_cast<int>(seq));
  }
  const auto end = s.done.wait("every sleeper");
  sleepers.clear();
  const double teardown = shut_down(system);

  std::vector<double> sorted = s.lateness_us;
  for (double l : sorted) {
    if (!std::isfinite(l)) throw bench_failure("a message's lateness was never recorded");
    if (l < 0) throw bench_failure("sleep_for(1ms) woke " + std::to_string(-l) + " us early");
  }
  std::sort(sorted.begin(), sorted.end());
  const auto messages = static_cast<double>(actors * per_actor);
  return {messages / seconds_between(start, end),
          {{"p50_lateness_us", percentile(sorted, 0.50)},
           {"p99_lateness_us", percentile(sorted, 0.99)},
           {"max_lateness_us", sorted.back()},
           {"teardown_s", teardown}}};
}

}  // namespace timers

std::vector<bench_case> all_cases() {
  constexpr std::int64_t million = 1'000'000;
  std::vector<bench_case> cases;

  cases.push_back(
      {"ping_pong_1",
       "msgs/s",
       ">= 6.08 M",
       at_least(6.08e6),
       {{"pairs", "1"},
        {"messages_per_pair", str(2 * million)},
        {"messages", str(2 * million)},
        {"placement", json_string("both players on one worker: the receiver of each ball runs "
                                  "next on the sender's worker (its next slot)")}},
       [](std::size_t w) { return pingpong::run(w, 1, 2 * million); }});
  cases.push_back(
      {"ping_pong_cross",
       "msgs/s",
       "",
       nullptr,
       {{"pairs", "1"},
        {"messages_per_pair", str(million)},
        {"messages", str(million)},
        {"placement",
         json_string("the players in two actor systems of 1 worker each (2 threads, --workers "
                     "ignored): every message crosses threads")}},
       [](std::size_t) { return pingpong::run_cross(million); }});
  cases.push_back(
      {"ping_pong_1000",
       "msgs/s",
       ">= 5.92 M",
       at_least(5.92e6),
       {{"pairs", "1000"}, {"messages_per_pair", "2000"}, {"messages", str(2 * million)}},
       [](std::size_t w) { return pingpong::run(w, 1000, 2000); }});
  cases.push_back({"fan_in_4",
                   "msgs/s",
                   ">= 11.46 M",
                   at_least(11.46e6),
                   {{"senders", "4"},
                    {"messages_per_sender", str(2'500'000)},
                    {"messages", str(10 * million)},
                    {"chunk", "1000"}},
                   [](std::size_t w) { return fanin::run(w, 4, 2'500'000, 1000); }});
  cases.push_back({"spawn",
                   "actors/s",
                   ">= 1.5 M",
                   at_least(1.5e6),
                   {{"actors", str(million)},
                    {"chunk", "10000"},
                    {"spawned_by", json_string("one parent actor, context().spawn, 10000 a turn")},
                    {"timed", json_string("spawning only")}},
                   [](std::size_t w) { return spawning::run_spawn(w, million, 10'000); }});
  cases.push_back({"bytes_per_idle_actor",
                   "bytes",
                   "<= 256",
                   at_most(256),
                   {{"actors", str(million)},
                    {"chunk", "10000"},
                    {"spawned_by", json_string("one parent actor, context().spawn, 10000 a turn")},
                    {"measure", json_string("RSS growth (/proc/self/statm) / actors, after "
                                            "purging the allocator's free pages")},
                    {"unpurged", json_string("unpurged_bytes_per_actor: the same without the "
                                             "purge (steady state)")}},
                   [](std::size_t w) { return spawning::run_bytes(w, million, 10'000); }});
  cases.push_back(
      {"skynet",
       "s",
       "<= 1 s",
       at_most(1.0),
       {{"leaves", str(million)},
        {"levels", "6"},
        {"fanout", "10"},
        {"actors", str(1'111'111)},
        {"stops", json_string("each inner node stops (with its children) once it replied")}},
       [](std::size_t w) { return skynet::run(w, million); }});
  cases.push_back({"timer_1ms",
                   "msgs/s",
                   "",
                   nullptr,
                   {{"actors", "10000"},
                    {"messages_per_actor", "10"},
                    {"messages", "100000"},
                    {"sleep_us", "1000"}},
                   [](std::size_t w) { return timers::run(w, 10'000, 10); }});
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  return troupe::bench::run_benchmarks(
      argc, argv,
      {"core", {}, [](const std::vector<std::int64_t>& /*unused*/) { return all_cases(); }, 9, 11});
}
