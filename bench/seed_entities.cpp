// entities mode: one sharded entity per key through Troupe's sharding; the entity's coroutine
// handler awaits the I/O per message (with --batch: an async_batch_actor, one await per batch).

#include <troupe/core/actor_system.hpp>
#include <troupe/sharding/cluster_sharding.hpp>

#include "bench_support.hpp"
#include "seed_parts.hpp"

#include <algorithm>

namespace troupe::bench::seed {

namespace {

const std::string type_name = "seed";

/// The run's per-key state, indexed by key: each entity appends to its own slot only.
struct entity_shared : run_shared {
  entity_shared(const prepared_workload& w, const run_config& c)
      : run_shared(w.spec.messages, c), per_key(w.names.size()) {}
  std::vector<std::vector<std::uint32_t>> per_key;
  std::uint32_t tracked_key = 0;
  /// Counts the no-op messages of --warm.
  std::unique_ptr<completion> warmed;
};

/// The sequence number of --warm's no-op message: starts the entity, writes nothing.
constexpr std::uint32_t warm_seq = UINT32_MAX;

std::uint32_t index_of(const std::string& id) {
  return static_cast<std::uint32_t>(std::stoul(id.substr(1)));
}

class key_entity final : public troupe::async_actor<keyed_write> {
 public:
  // The state lives in the run (not in the entity) so the order check can read it afterwards.
  explicit key_entity(entity_shared* s)
      : s_(s), index_(index_of(entity_id())), state_(&s->per_key[index_]) {}

 private:
  boost::asio::awaitable<void> receive(keyed_write w) override {
    if (w.seq == warm_seq) {
      s_->warmed->count_down(1);
      co_return;
    }
    const bool tracked = index_ == s_->tracked_key;
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
    state_->push_back(w.seq);
    s_->done.count_down(1);
  }

  entity_shared* s_;
  std::uint32_t index_;
  std::vector<std::uint32_t>* state_;
};

class batching_key_entity final : public troupe::async_batch_actor<keyed_write> {
 public:
  explicit batching_key_entity(entity_shared* s)
      : s_(s), index_(index_of(entity_id())), state_(&s->per_key[index_]) {}

 private:
  [[nodiscard]] std::size_t max_batch() const noexcept override {
    return static_cast<std::size_t>(s_->batch);
  }

  boost::asio::awaitable<void> receive_batch(
      std::vector<troupe::batch_item<keyed_write>> batch) override {
    if (batch.front().message.seq == warm_seq) {  // --warm sends one before anything else
      s_->warmed->count_down(1);
      batch.erase(batch.begin());
      if (batch.empty()) co_return;
    }
    const bool tracked = index_ == s_->tracked_key;
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
    for (auto& item : batch) state_->push_back(item.message.seq);
    s_->done.count_down(static_cast<std::int64_t>(batch.size()));
  }

  entity_shared* s_;
  std::uint32_t index_;
  std::vector<std::uint32_t>* state_;
};

std::string key_of(const keyed_write& w) { return w.key; }

}  // namespace

run_result run_entities(const prepared_workload& w, const run_config& c,
                        std::uint32_t tracked_key) {
  entity_shared s(w, c);
  s.tracked_key = tracked_key;
  const auto limit = wait_limit_for(c, *std::max_element(w.key_counts.begin(), w.key_counts.end()));
  run_result result;
  {
    troupe::actor_system system(bench_config(c.workers));
    auto& sharding = troupe::sharding::cluster_sharding::get(system);
    auto options = troupe::sharding::sharding_options<keyed_write>::create()
                       .with_type_name(type_name)
                       .with_extract_entity_id(key_of)
                       .with_num_shards(c.shards)
                       .with_max_concurrent(static_cast<std::size_t>(c.max_concurrent));
    if (c.batch > 1) {
      options.with_entity<batching_key_entity>(&s);
    } else {
      options.with_entity<key_entity>(&s);
    }
    auto region = sharding.start(std::move(options));
    if (c.warm) {
      s.warmed = std::make_unique<completion>(static_cast<std::int64_t>(w.names.size()));
      for (const auto& name : w.names) region.tell(keyed_write{name, warm_seq, {}});
      s.warmed->wait(std::chrono::seconds(120));
    }

    const auto start = steady::now();
    std::vector<std::uint32_t> next_seq(w.names.size());
    for (const std::uint32_t k : w.keys) {
      keyed_write msg{w.names[k], next_seq[k]++, {}};
      if (k == tracked_key) msg.sent = steady::now();
      region.tell(std::move(msg));
    }
    result.send_s = seconds_between(start, steady::now());
    const auto end = s.done.wait(limit);
    result.total_s = seconds_between(start, end);
    result.msgs_per_s = static_cast<double>(w.spec.messages) / result.total_s;

    for (const auto& info : sharding.shards(type_name)) {
      result.shard_loads.push_back({info.id, info.messages_processed, info.entity_count});
    }
    result.hottest_ids = sharding.state(type_name).hottest;
    shut_down(system);
  }
  for (std::size_t k = 0; k < s.per_key.size() && result.order_error.empty(); ++k) {
    result.order_error = check_key(w.names[k], s.per_key[k], w.key_counts[k]);
  }
  result.hot = std::move(s.hot.stats);
  return result;
}

}  // namespace troupe::bench::seed
