// troupe_bench_remote: messages between two nodes in two OS processes on 127.0.0.1 (issue 6),
// one JSON line per case, then a table. Every case runs over plain TCP and over mutual TLS
// ("params":{"tls":false|true}); the certificates come from scripts/make-test-certs.sh.
//
//   remote_tell            node A sends small messages to one actor on node B as fast as it can,
//                          with a window of unacknowledged messages (B acknowledges every
//                          10,000): msgs/s from the first send until B has handled the last.
//   remote_ask_latency     one ask at a time from A to an echo actor on B: p99 in µs (fields
//                          p50_us and p99_us).
//   remote_ask_throughput  asks with 64 outstanding: asks/s.
//
// Node B is this program started again with --serve (a child process per run). --shrink K
// divides the message counts, for profiling.

#include <troupe/cluster/remote_node.hpp>
#include <troupe/cluster/tcp_transport.hpp>
#include <troupe/core/actor.hpp>

#include "bench_support.hpp"
#include "child_process.hpp"

#include <boost/describe/class.hpp>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <variant>
#include <vector>

namespace {

using namespace troupe::bench;
using namespace std::chrono_literals;
namespace tc = troupe::cluster;
namespace fs = std::filesystem;

// -- messages ---------------------------------------------------------------------------------

struct ack {
  std::uint64_t handled = 0;
  bool in_order = true;
};
BOOST_DESCRIBE_STRUCT(ack, (), (handled, in_order))

struct start_sink {
  troupe::actor_ref<ack> ack_to;
  std::uint64_t every = 0;
};
BOOST_DESCRIBE_STRUCT(start_sink, (), (ack_to, every))

/// The measured message: a sequence number and 16 bytes of payload.
struct bench_msg {
  std::uint64_t seq = 0;
  std::uint64_t a = 0;
  std::uint64_t b = 0;
};
BOOST_DESCRIBE_STRUCT(bench_msg, (), (seq, a, b))

struct ping {
  std::uint64_t n = 0;
};
BOOST_DESCRIBE_STRUCT(ping, (), (n))

struct pong {
  std::uint64_t n = 0;
};
BOOST_DESCRIBE_STRUCT(pong, (), (n))

using sink_msg = std::variant<start_sink, bench_msg>;

std::shared_ptr<tc::message_registry> registry() {
  auto r = std::make_shared<tc::message_registry>();
  r->add<sink_msg>("bench.sink_msg")
      .add<ack>("bench.ack")
      .add<ping>("bench.ping")
      .add<pong>("bench.pong");
  return r;
}

// -- node B's actors --------------------------------------------------------------------------

/// Counts messages, checks their order, and acknowledges every `every`.
class sink_actor final : public troupe::actor<sink_msg> {
  void receive(sink_msg& m) override {
    if (auto* s = std::get_if<start_sink>(&m)) {
      ack_to_ = s->ack_to;
      every_ = s->every;
      handled_ = 0;
      in_order_ = true;
      ack_to_.tell(ack{0, true});
      return;
    }
    auto& b = std::get<bench_msg>(m);
    if (b.seq != handled_) in_order_ = false;
    if (++handled_ % every_ == 0) ack_to_.tell(ack{handled_, in_order_});
  }
  troupe::actor_ref<ack> ack_to_;
  std::uint64_t every_ = 1;
  std::uint64_t handled_ = 0;
  bool in_order_ = true;
};

class echo_actor final : public troupe::actor<ping> {
  void receive(ping& p) override { context().reply(pong{p.n}); }
};

// -- node A's side ----------------------------------------------------------------------------

/// Notes the acknowledgements of the sink.
class ack_actor final : public troupe::actor<ack> {
 public:
  ack_actor(std::atomic<std::uint64_t>* handled, std::atomic<bool>* ok)
      : handled_(*handled), ok_(*ok) {}

 private:
  void receive(ack& a) override {
    if (!a.in_order) ok_.store(false);
    handled_.store(a.handled, std::memory_order_release);
  }
  std::atomic<std::uint64_t>& handled_;
  std::atomic<bool>& ok_;
};

/// Where the certificates are; node B gets the parent's directory on its command line.
std::string& certs_override() {
  static std::string dir;
  return dir;
}

std::string certs_dir() {
  if (!certs_override().empty()) return certs_override();
  // Made once per benchmark process, removed when it exits.
  static const struct made {
    std::string path;
    made() {
      path = (fs::temp_directory_path() / ("troupe-bench-certs-" + std::to_string(::getpid())))
                 .string();
      const std::string cmd =
          std::string(TROUPE_SOURCE_DIR) + "/scripts/make-test-certs.sh " + path;
      if (std::system(cmd.c_str()) != 0) throw bench_failure("could not make certificates: " + cmd);
    }
    ~made() {
      std::error_code ignored;
      fs::remove_all(path, ignored);
    }
  } dir;
  return dir.path;
}

tc::remote_options node_options(bool tls, const std::string& node_name) {
  tc::tcp_options tcp;
  if (tls) {
    const auto dir = certs_dir();
    tcp.with_tls(tc::tls_options{dir + "/ca.crt", dir + "/" + node_name + ".crt",
                                 dir + "/" + node_name + ".key"});
  }
  return tc::remote_options{}
      .with_cluster_name("bench")
      .with_registry(registry())
      .with_transport([tcp](boost::asio::any_io_executor ex) {
        return std::make_shared<tc::tcp_transport>(ex, tcp);
      });
}

/// Node B in a child process: started with --serve, prints its port, runs until stdin closes.
int serve(bool tls, std::size_t workers) {
  troupe::actor_system system(bench_config(workers));
  tc::remote_node node(system, node_options(tls, "node-b"));
  node.expose(system.spawn<sink_actor>("sink"));
  node.expose(system.spawn<echo_actor>("echo"));
  std::printf("PORT %u\n", static_cast<unsigned>(node.self().address.port));
  std::fflush(stdout);
  char buf[64];
  while (::read(0, buf, sizeof buf) > 0) {
  }
  node.shutdown();
  system.terminate();
  system.await_termination();
  return 0;
}

/// The child process running node B, stopped when this goes out of scope.
class server_process {
 public:
  server_process(bool tls, std::size_t workers)
      : child_({"--serve", tls ? "tls" : "plain", std::to_string(workers),
                tls ? certs_dir() : std::string("-")},
               "node B") {
    unsigned port = 0;
    if (std::sscanf(child_.first_line().c_str(), "PORT %u", &port) != 1) {
      throw bench_failure("node B did not print its port");
    }
    port_ = static_cast<std::uint16_t>(port);
  }

  [[nodiscard]] tc::node_address address() const { return {"127.0.0.1", port_}; }

 private:
  child_process child_;
  std::uint16_t port_ = 0;
};

/// Node A and the child running node B, for one run.
struct two_processes {
  two_processes(bool tls, std::size_t workers)
      : server(tls, workers),
        system(bench_config(workers)),
        node(system, node_options(tls, "node-a")) {}
  ~two_processes() {
    node.shutdown();
    system.terminate();
    system.await_termination();
  }
  server_process server;
  troupe::actor_system system;
  tc::remote_node node;
};

void wait_until(const std::function<bool()>& done, const std::string& what) {
  const auto deadline = steady::now() + wait_limit;
  while (!done()) {
    if (steady::now() > deadline) throw bench_failure("timed out waiting for " + what);
    std::this_thread::sleep_for(100us);
  }
}

run_result remote_tell(bool tls, std::size_t workers, std::uint64_t messages) {
  two_processes p(tls, workers);
  std::atomic<std::uint64_t> handled{UINT64_MAX};
  std::atomic<bool> ok{true};
  auto acks = p.system.spawn<ack_actor>("acks", &handled, &ok);
  auto sink = p.node.ref_to<sink_msg>(p.server.address(), "/user/sink");
  const std::uint64_t every = std::min<std::uint64_t>(10'000, messages);
  sink.tell(start_sink{acks, every});
  wait_until([&] { return handled.load() == 0; }, "node B's sink to start");
  const std::uint64_t window = 200'000;
  const auto start = steady::now();
  for (std::uint64_t i = 0; i < messages; ++i) {
    while (i >= handled.load(std::memory_order_acquire) + window) std::this_thread::yield();
    sink.tell(bench_msg{i, i * 3, i * 7});
  }
  wait_until([&] { return handled.load() >= messages / every * every; },
             "node B to handle every message");
  const auto end = steady::now();
  check(ok.load(), "node B saw messages out of order");
  run_result out;
  out.value = static_cast<double>(messages / every * every) / seconds_between(start, end);
  return out;
}

run_result remote_ask_latency(bool tls, std::size_t workers, std::uint64_t asks) {
  two_processes p(tls, workers);
  auto echo = p.node.ref_to<ping>(p.server.address(), "/user/echo");
  (void)echo.ask<pong>(ping{0}, 10s, troupe::use_future).get();  // connect
  std::vector<double> micros;
  micros.reserve(asks);
  for (std::uint64_t i = 0; i < asks; ++i) {
    const auto t0 = steady::now();
    auto reply = echo.ask<pong>(ping{i}, 10s, troupe::use_future).get();
    micros.push_back(seconds_between(t0, steady::now()) * 1e6);
    check(reply.n == i, "wrong reply");
  }
  std::sort(micros.begin(), micros.end());
  run_result out;
  out.value = percentile(micros, 0.99);
  out.extras = {{"p50_us", percentile(micros, 0.50)}, {"p99_us", percentile(micros, 0.99)}};
  return out;
}

run_result remote_ask_throughput(bool tls, std::size_t workers, std::uint64_t asks) {
  two_processes p(tls, workers);
  auto echo = p.node.ref_to<ping>(p.server.address(), "/user/echo");
  (void)echo.ask<pong>(ping{0}, 10s, troupe::use_future).get();
  std::deque<std::future<pong>> outstanding;
  const auto start = steady::now();
  for (std::uint64_t i = 0; i < asks; ++i) {
    if (outstanding.size() == 64) {
      outstanding.front().get();
      outstanding.pop_front();
    }
    outstanding.push_back(echo.ask<pong>(ping{i}, 10s, troupe::use_future));
  }
  while (!outstanding.empty()) {
    outstanding.front().get();
    outstanding.pop_front();
  }
  run_result out;
  out.value = static_cast<double>(asks) / seconds_between(start, steady::now());
  return out;
}

std::vector<bench_case> all_cases(std::int64_t shrink) {
  const auto tells = static_cast<std::uint64_t>(std::max<std::int64_t>(10'000, 3'000'000 / shrink));
  const auto latency_asks =
      static_cast<std::uint64_t>(std::max<std::int64_t>(100, 20'000 / shrink));
  const auto many_asks =
      static_cast<std::uint64_t>(std::max<std::int64_t>(1'000, 300'000 / shrink));
  std::vector<bench_case> cases;
  for (bool tls : {false, true}) {
    const std::string tls_json = tls ? "true" : "false";
    cases.push_back({"remote_tell",
                     "msgs/s",
                     ">= 3 M",
                     at_least(3e6),
                     {{"tls", tls_json},
                      {"messages", str(static_cast<std::int64_t>(tells))},
                      {"payload_bytes", "24"},
                      {"window", "200000"}},
                     [=](std::size_t w) { return remote_tell(tls, w, tells); }});
    cases.push_back({"remote_ask_latency",
                     "us (p99)",
                     "<= 200",
                     at_most(200),
                     {{"tls", tls_json},
                      {"asks", str(static_cast<std::int64_t>(latency_asks))},
                      {"outstanding", "1"}},
                     [=](std::size_t w) { return remote_ask_latency(tls, w, latency_asks); }});
    cases.push_back({"remote_ask_throughput",
                     "asks/s",
                     "",
                     nullptr,
                     {{"tls", tls_json},
                      {"asks", str(static_cast<std::int64_t>(many_asks))},
                      {"outstanding", "64"}},
                     [=](std::size_t w) { return remote_ask_throughput(tls, w, many_asks); }});
  }
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::strcmp(argv[1], "--serve") == 0) {
    certs_override() = argv[4];
    return serve(std::strcmp(argv[2], "tls") == 0, static_cast<std::size_t>(std::atoi(argv[3])));
  }
  return troupe::bench::run_benchmarks(
      argc, argv,
      {"remote",
       {{"--shrink", "K", 1, 10'000}},
       [](const std::vector<std::int64_t>& flags) { return all_cases(flags[0]); },
       9,
       9});
}
