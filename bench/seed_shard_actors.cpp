// shard-actors mode: the guide's own design in C++. N plain async actors, each owning a map from
// key to state, picked by crc32(key) % N; each handles one message at a time and awaits the I/O
// inside its handler (with --batch: one await per batch, the guide's write_many).

#include <troupe/core/actor_system.hpp>

#include "bench_support.hpp"
#include "seed_parts.hpp"

#include <algorithm>
#include <unordered_map>

namespace troupe::bench::seed {

namespace {

/// A shard's state: key -> the values written for it, in order.
using shard_state = std::unordered_map<std::string, std::vector<std::uint32_t>>;

bool stamped(const keyed_write& w) { return w.sent != steady::time_point{}; }

class shard_actor final : public troupe::async_actor<keyed_write> {
 public:
  // The state lives in the run (not in the actor) so the order check can read it afterwards.
  shard_actor(run_shared* s, shard_state* state) : s_(s), state_(state) {}

 private:
  boost::asio::awaitable<void> receive(keyed_write w) override {
    const bool tracked = stamped(w);
    if (tracked) {
      const auto start = steady::now();
      s_->hot.on_batch(start, 1);
      s_->hot.on_message(start, w.sent);
    }
    if (s_->plain_io()) {
      co_await troupe::sleep_for(s_->io);
    } else {
      co_await await_io(s_);
    }
    if (tracked) s_->hot.on_resumed(steady::now(), s_->io);
    (*state_)[w.key].push_back(w.seq);
    s_->done.count_down(1);
  }

  run_shared* s_;
  shard_state* state_;
};

class batching_shard_actor final : public troupe::async_batch_actor<keyed_write> {
 public:
  batching_shard_actor(run_shared* s, shard_state* state) : s_(s), state_(state) {}

 private:
  [[nodiscard]] std::size_t max_batch() const noexcept override {
    return static_cast<std::size_t>(s_->batch);
  }

  boost::asio::awaitable<void> receive_batch(
      std::vector<troupe::batch_item<keyed_write>> batch) override {
    const bool tracked = stamped(batch.front().message);
    if (tracked) {
      const auto start = steady::now();
      s_->hot.on_batch(start, static_cast<std::int64_t>(batch.size()));
      for (const auto& item : batch) s_->hot.on_message(start, item.message.sent);
    }
    if (s_->plain_io()) {
      co_await troupe::sleep_for(s_->io);  // one round trip for the whole batch
    } else {
      co_await await_io(s_);
    }
    if (tracked) s_->hot.on_resumed(steady::now(), s_->io);
    // The batch came in arrival order, so appending in batch order keeps per-key order.
    for (auto& item : batch) (*state_)[item.message.key].push_back(item.message.seq);
    s_->done.count_down(static_cast<std::int64_t>(batch.size()));
  }

  run_shared* s_;
  shard_state* state_;
};

std::string check_order(const prepared_workload& w, const std::vector<shard_state>& states,
                        std::uint32_t shards) {
  std::size_t keys_seen = 0;
  for (std::size_t shard = 0; shard < states.size(); ++shard) {
    for (const auto& [key, values] : states[shard]) {
      if (shard_of_key(key, shards) != shard) return key + " was handled by the wrong shard";
      const auto index = static_cast<std::size_t>(std::stoull(key.substr(1)));
      if (auto e = check_key(key, values, w.key_counts.at(index)); !e.empty()) return e;
      ++keys_seen;
    }
  }
  const auto keys_sent = static_cast<std::size_t>(
      std::count_if(w.key_counts.begin(), w.key_counts.end(), [](auto n) { return n > 0; }));
  if (keys_seen != keys_sent) {
    return std::to_string(keys_seen) + " keys hold state, " + std::to_string(keys_sent) +
           " were sent";
  }
  return {};
}

}  // namespace

run_result run_shard_actors(const prepared_workload& w, const run_config& c,
                            std::uint32_t tracked_shard) {
  run_shared s(w.spec.messages, c);
  if (c.max_concurrent > 0) s.limiter = std::make_unique<io_limiter>(c.max_concurrent);
  const auto shard_counts = per_shard_counts(w.key_counts, c.shards);
  const auto limit = wait_limit_for(c, *std::max_element(shard_counts.begin(), shard_counts.end()));

  std::vector<shard_state> states(c.shards);
  run_result result;
  {
    troupe::actor_system system(bench_config(c.workers));
    std::vector<troupe::actor_ref<keyed_write>> refs;
    for (std::uint32_t i = 0; i < c.shards; ++i) {
      const std::string name = "shard-" + std::to_string(i);
      if (c.batch > 1) {
        refs.push_back(system.spawn<batching_shard_actor>(name, &s, &states[i]));
      } else {
        refs.push_back(system.spawn<shard_actor>(name, &s, &states[i]));
      }
    }
    const auto start = steady::now();
    std::vector<std::uint32_t> next_seq(w.names.size());
    for (const std::uint32_t k : w.keys) {
      const std::string& key = w.names[k];
      const std::uint32_t shard = shard_of_key(key, c.shards);  // the guide's router
      keyed_write msg{key, next_seq[k]++, {}};
      if (shard == tracked_shard) msg.sent = steady::now();
      refs[shard].tell(std::move(msg));
    }
    result.send_s = seconds_between(start, steady::now());
    const auto end = s.done.wait(limit);
    result.total_s = seconds_between(start, end);
    result.msgs_per_s = static_cast<double>(w.spec.messages) / result.total_s;
    refs.clear();
    shut_down(system);
  }
  result.order_error = check_order(w, states, c.shards);
  result.hot = std::move(s.hot.stats);
  return result;
}

}  // namespace troupe::bench::seed
