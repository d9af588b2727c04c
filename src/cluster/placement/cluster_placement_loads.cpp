// The region's load report: every load_interval, each hosted shard's message rate since the
// last report, written under the node's lease for the coordinator's strategy (load_keys.hpp).
#include "cluster/coordination/load_keys.hpp"
#include "cluster/placement/cluster_placement.hpp"
#include "cluster/strand_steps.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

namespace troupe::cluster {

namespace coord = sharding::coordination;
using sharding::shard_id;

void cluster_placement::set_delivery_counter(delivery_counter counter) {
  std::lock_guard lock(mutex_);
  counter_ = std::move(counter);
}

void cluster_placement::report_load() {
  load_timer_ =
      clock_->schedule_after(options_.load_interval, [weak = weak_from_this(), strand = strand_] {
        boost::asio::post(strand, [weak] {
          auto self = weak.lock();
          if (!self || self->stopped() || self->load_timer_ == 0) return;
          self->report_load();
        });
      });
  delivery_counter counter;
  {
    std::lock_guard lock(mutex_);
    counter = counter_;
  }
  if (!counter) return;
  // Read without mutex_: the counter takes the routes' locks, under which the region may ask
  // home_of(), which takes mutex_.
  const auto counts = counter();
  const time_point now = clock_->now();
  const double seconds = std::chrono::duration<double>(now - last_counted_).count();
  std::vector<coord::shard_load> loads;
  {
    std::lock_guard lock(mutex_);
    if (!hosting_ || fenced()) return;
    for (const auto& [shard, count] : counts) {
      const auto a = allocations_.find(shard);
      if (a == allocations_.end() || a->second.owner != options_.self) continue;
      const auto last = last_counts_.find(shard);
      const std::uint64_t before = last == last_counts_.end() ? count : last->second;
      if (seconds > 0 && count >= before) {
        loads.push_back({shard, static_cast<double>(count - before) / seconds});
      }
    }
    // Shards allocated here that nothing was delivered to count too: 0 is a rate.
    for (const auto& [shard, a] : allocations_) {
      if (a.owner == options_.self && !last_counts_.contains(shard) &&
          std::none_of(loads.begin(), loads.end(),
                       [&](const auto& l) { return l.shard == shard; })) {
        loads.push_back({shard, 0.0});
      }
    }
  }
  last_counts_.clear();
  for (const auto& [shard, count] : counts) last_counts_[shard] = count;
  last_counted_ = now;
  std::sort(loads.begin(), loads.end(),
            [](const auto& a, const auto& b) { return a.shard < b.shard; });
  std::string value = encode_loads(loads);
  if (value == last_load_) return;
  last_load_ = value;
  txn_request t;
  t.success.emplace_back(put_op{load_key(options_.cluster, options_.type, options_.self),
                                std::move(value), options_.self.incarnation});
  store_->txn(std::move(t), detail::resume_on<txn_result>(
                                weak_from_this(), strand_,
                                [](cluster_placement& self, std::error_code ec, txn_result) {
                                  // Not written: the next report writes it whatever it says.
                                  if (ec) self.last_load_.clear();
                                }));
}

}  // namespace troupe::cluster
