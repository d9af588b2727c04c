// The consensus store conformance suite against a real etcd (TROUPE_ETCD_ENDPOINTS, started by
// scripts/etcd.sh in the test run): the same cases the in-process model passes, so the model
// stays a faithful stand-in. Time is real here: handlers run on the test thread, which runs the
// test's io_context in short slices until a condition holds or its deadline passes.
#include <troupe/cluster/membership/consensus_store.hpp>

#include "consensus_store_conformance.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace troupe::cluster {
namespace {

using namespace std::chrono_literals;
using conformance::environment_factory;
using conformance::store_environment;

std::vector<std::string> endpoints_from_env() {
  std::vector<std::string> out;
  const char* env = std::getenv("TROUPE_ETCD_ENDPOINTS");
  if (env == nullptr) return out;
  std::stringstream list(env);
  for (std::string one; std::getline(list, one, ',');) {
    if (!one.empty()) out.push_back(one);
  }
  return out;
}

/// A real etcd shared with other tests: every case gets a key prefix of its own, and history is
/// never compacted (compaction is global and would cut other tests' watches).
class etcd_environment final : public store_environment {
 public:
  std::shared_ptr<consensus_store> make_store() override {
    etcd_store_options options;
    options.endpoints = endpoints_from_env();
    return make_etcd_store(io_.get_executor(), std::move(options));
  }

  void let_time_pass(duration d) override {
    const auto until = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < until) run_slice(until);
  }

  bool run_until(const std::function<bool()>& done, duration timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      run_slice(deadline);
    }
    return true;
  }

  std::string unique_prefix() override {
    static std::atomic<int> counter{0};
    static const std::uint64_t run = std::random_device{}();
    return "/troupe-conformance/" + std::to_string(run) + "/" + std::to_string(counter++) + "/";
  }

  std::optional<std::string> compact(revision) override {
    return "compaction is global on a shared etcd; the model and the client's stand-in gateway "
           "cover it";
  }

 private:
  // Runs handlers for at most 5 ms (less when `limit` is nearer), sleeping when there are none.
  void run_slice(std::chrono::steady_clock::time_point limit) {
    const auto slice = std::min<std::chrono::steady_clock::duration>(
        5ms, limit - std::chrono::steady_clock::now());
    if (slice <= std::chrono::steady_clock::duration::zero()) return;
    io_.restart();
    io_.run_for(slice);
  }

  boost::asio::io_context io_;
  // Keeps run_for waiting for answers when no handler is queued yet.
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{
      io_.get_executor()};
};

std::optional<std::string> etcd_unavailable() {
  if (endpoints_from_env().empty()) {
    return std::string("TROUPE_ETCD_ENDPOINTS is not set: start etcd with `scripts/etcd.sh start`");
  }
  return std::nullopt;
}

}  // namespace

namespace conformance {
INSTANTIATE_TEST_SUITE_P(etcd, consensus_store_conformance,
                         testing::Values(environment_factory{
                             "etcd", [] { return std::make_unique<etcd_environment>(); },
                             etcd_unavailable}),
                         environment_name);
}  // namespace conformance
}  // namespace troupe::cluster
