#include "shard_watcher.hpp"

#include <chrono>
#include <cstdio>
#include <exception>
#include <future>
#include <optional>
#include <vector>

namespace cluster_demo {

namespace tc = troupe::cluster;
using namespace std::chrono_literals;

namespace {

std::optional<tc::cluster_state> read(tc::cluster_node& node) {
  auto state = node.read_state();
  if (state.wait_for(2s) != std::future_status::ready) return std::nullopt;
  try {
    return state.get();
  } catch (const std::exception&) {
    return std::nullopt;  // the next poll reads again
  }
}

const tc::type_state* carts_of(const tc::cluster_state& s) {
  for (const auto& t : s.types) {
    if (t.type == "cart") return &t;
  }
  return nullptr;
}

}  // namespace

void shard_watcher::start(tc::cluster_node& reader) {
  reader_ = &reader;
  if (auto s = read(reader)) {
    if (const auto* carts = carts_of(*s)) {
      std::lock_guard lock(mutex_);
      for (const auto& p : carts->shards) owner_[p.shard] = p.owner.node;
    }
  }
  last_move_ = demo_clock::now();
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      std::this_thread::sleep_for(100ms);
      poll();
    }
  });
}

void shard_watcher::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void shard_watcher::poll() {
  std::lock_guard one_at_a_time(polling_);
  auto s = read(*reader_);
  if (!s) return;
  const auto now = demo_clock::now();
  std::set<std::string> members;
  std::vector<std::string> moves;
  {
    std::lock_guard lock(mutex_);
    for (const auto& m : s->members) {
      members.insert(m.info.id.node);
      if (m.info.leaving) leaving_.insert(m.info.id.node);
    }
    const auto* carts = carts_of(*s);
    if (carts == nullptr) return;
    for (const auto& p : carts->shards) {
      std::string& owner = owner_[p.shard];
      if (!owner.empty() && owner != p.owner.node) {
        const bool handoff = members.count(owner) > 0 || leaving_.count(owner) > 0;
        (handoff ? handoffs_ : failovers_).fetch_add(1);
        char text[128];
        std::snprintf(text, sizeof text, "  %s  shard %2u  %s -> %s  (%s)", since(t0_, now).c_str(),
                      p.shard, owner.c_str(), p.owner.node.c_str(),
                      handoff ? "hand-off" : "failover");
        moves.emplace_back(text);
        last_move_ = now;
      }
      owner = p.owner.node;
    }
  }
  for (const auto& m : moves) out_.line(m);
}

std::map<std::string, std::set<std::uint32_t>> shard_watcher::shards() const {
  std::lock_guard lock(mutex_);
  std::map<std::string, std::set<std::uint32_t>> out;
  for (const auto& [shard, node] : owner_) out[node].insert(shard);
  return out;
}

std::set<std::uint32_t> shard_watcher::shards_of_now(const std::string& node) const {
  std::set<std::uint32_t> out;
  if (auto s = read(*reader_)) {
    if (const auto* carts = carts_of(*s)) {
      for (const auto& p : carts->shards) {
        if (p.owner.node == node) out.insert(p.shard);
      }
      return out;
    }
  }
  return shards()[node];  // the store did not answer in time: the latest poll's view
}

demo_clock::time_point shard_watcher::last_move() const {
  std::lock_guard lock(mutex_);
  return last_move_;
}

}  // namespace cluster_demo
