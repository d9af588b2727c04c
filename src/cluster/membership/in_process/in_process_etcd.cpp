// The in-process etcd: one key_space behind a mutex, its expiry scan on the clock, the watches,
// and the clients (one per node) with their reachability.
#include <troupe/cluster/membership/in_process_store.hpp>

#include "key_space.hpp"
#include "watch_feed.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

namespace troupe::cluster {

using in_process::key_space;
using in_process::watch_feed;

struct in_process_etcd::core : std::enable_shared_from_this<core> {
  core(std::shared_ptr<troupe::clock> c, in_process_store_options o)
      : clock(std::move(c)),
        options(o),
        origin(clock->now()),
        space(options.min_ttl, options.history,
              [this](const in_process::revision_events& r) { publish(r); }) {}

  ~core() {
    if (scan_timer != 0) clock->cancel(scan_timer);
  }

  /// Hands a new revision to every watch whose range it touches.
  void publish(const in_process::revision_events& r) {
    for (const auto& w : watches) {
      if (r.rev < w->start()) continue;
      watch_batch batch;
      batch.header_revision = r.rev;
      for (const auto& e : r.events) {
        if (in_process::in_range(w->range(), e.kv.key)) batch.events.push_back(e);
      }
      if (!batch.events.empty()) w->deliver(std::move(batch));
    }
  }

  /// Keeps the expiry scan running while leases exist, on a fixed grid of `expiry_scan` steps
  /// from the model's start, as etcd's lessor loop ticks regardless of when leases were granted.
  void ensure_scan() {
    if (scan_timer != 0 || !space.has_leases()) return;
    const auto step = options.expiry_scan;
    const auto ticks = (clock->now() - origin) / step + 1;
    const time_point at = origin + ticks * step;
    scan_timer = clock->schedule_at(at, [weak = weak_from_this()] {
      if (auto self = weak.lock()) self->scan();
    });
  }

  void scan() {
    std::lock_guard lock(mutex);
    scan_timer = 0;
    space.expire(clock->now());
    ensure_scan();
  }

  void remove_watch(const watch_feed* w) {
    std::lock_guard lock(mutex);
    std::erase_if(watches, [&](const auto& p) { return p.get() == w; });
  }

  std::shared_ptr<troupe::clock> clock;
  in_process_store_options options;
  time_point origin;
  mutable std::mutex mutex;
  key_space space;
  timer_id scan_timer = 0;
  std::vector<std::shared_ptr<watch_feed>> watches;
  std::vector<std::uint64_t> cut_clients;   // few, and only under faults
  std::vector<std::uint64_t> deaf_clients;  // their answers are lost (one way)
  std::uint64_t next_client = 1;
};

namespace {

class model_watch final : public watch_handle {
 public:
  model_watch(std::weak_ptr<in_process_etcd::core> core, std::shared_ptr<watch_feed> feed)
      : core_(std::move(core)), feed_(std::move(feed)) {}
  ~model_watch() override { model_watch::cancel(); }

  void cancel() noexcept override {
    if (!feed_) return;
    if (auto c = core_.lock()) c->remove_watch(feed_.get());
    feed_->cancel();
    feed_.reset();
  }

 private:
  std::weak_ptr<in_process_etcd::core> core_;
  std::shared_ptr<watch_feed> feed_;
};

class model_client final : public consensus_store,
                           public std::enable_shared_from_this<model_client> {
 public:
  model_client(std::shared_ptr<in_process_etcd::core> core, boost::asio::any_io_executor executor,
               std::uint64_t id)
      : core_(std::move(core)), executor_(std::move(executor)), id_(id) {}

  [[nodiscard]] const in_process_etcd::core* owner() const noexcept { return core_.get(); }
  [[nodiscard]] std::uint64_t id() const noexcept { return id_; }

  void range(key_range r, handler<range_result> done) override {
    request<range_result>(std::move(done), [&](range_result& out) -> std::error_code {
      if (r.key.empty() && r.end.empty()) return errc::invalid_store_request;
      out.kvs = core_->space.range(r);
      out.header_revision = core_->space.current_revision();
      return {};
    });
  }

  void txn(txn_request req, handler<txn_result> done) override {
    request<txn_result>(std::move(done),
                        [&](txn_result& out) { return core_->space.txn(req, out); });
  }

  void grant_lease(duration ttl, handler<lease_grant> done) override {
    request<lease_grant>(std::move(done), [&](lease_grant& out) -> std::error_code {
      out = core_->space.grant(ttl, core_->clock->now());
      core_->ensure_scan();
      return {};
    });
  }

  void keep_alive(lease_id lease, handler<duration> done) override {
    request<duration>(std::move(done), [&](duration& out) {
      return core_->space.renew(lease, core_->clock->now(), out);
    });
  }

  void revoke_lease(lease_id lease, handler<revision> done) override {
    request<revision>(std::move(done), [&](revision& out) {
      auto ec = core_->space.revoke(lease);
      out = core_->space.current_revision();
      return ec;
    });
  }

  std::unique_ptr<watch_handle> watch(key_range r, revision start,
                                      watch_handler on_batch) override {
    auto feed = std::make_shared<watch_feed>(executor_, r, start, id_, std::move(on_batch));
    std::lock_guard lock(core_->mutex);
    const revision now = core_->space.current_revision();
    if (cut() || deaf()) {
      fail_later([feed, now] { feed->end(errc::store_unavailable, now); });
    } else if (start <= 0 || (r.key.empty() && r.end.empty())) {
      feed->end(errc::invalid_store_request, now);
    } else {
      std::vector<watch_event> past;
      if (auto ec = core_->space.history(r, start, past)) {
        feed->end(ec, now);
      } else {
        deliver_past(*feed, std::move(past));
        core_->watches.push_back(feed);
      }
    }
    return std::make_unique<model_watch>(core_, std::move(feed));
  }

  [[nodiscard]] boost::asio::any_io_executor executor() const override { return executor_; }

 private:
  /// Splits replayed events into batches of whole revisions, in order.
  static void deliver_past(watch_feed& feed, std::vector<watch_event> past) {
    std::size_t i = 0;
    while (i < past.size()) {
      watch_batch batch;
      batch.header_revision = past[i].kv.mod_revision;
      while (i < past.size() && past[i].kv.mod_revision == batch.header_revision)
        batch.events.push_back(std::move(past[i++]));
      feed.deliver(std::move(batch));
    }
  }

  bool cut() const {
    return std::find(core_->cut_clients.begin(), core_->cut_clients.end(), id_) !=
           core_->cut_clients.end();
  }
  bool deaf() const {
    return std::find(core_->deaf_clients.begin(), core_->deaf_clients.end(), id_) !=
           core_->deaf_clients.end();
  }

  /// Runs `fn` once the request timeout has passed on the clock, if this client still exists.
  template <class Fn>
  void fail_later(Fn fn) {
    core_->clock->schedule_after(core_->options.request_timeout,
                                 [weak = weak_from_this(), fn = std::move(fn)]() mutable {
                                   if (weak.lock()) fn();
                                 });
  }

  /// Applies `apply` under the model's lock, or, while cut off, fails after the timeout (also
  /// after applying it, while the answers are lost); the answer is always posted, never run
  /// inline.
  template <class T, class Apply>
  void request(handler<T> done, Apply&& apply) {
    std::lock_guard lock(core_->mutex);
    const bool cut_off = cut();
    const bool answers_lost = !cut_off && deaf();
    if (answers_lost) {
      T ignored{};
      (void)apply(ignored);
    }
    if (cut_off || answers_lost) {
      fail_later([done = std::move(done), executor = executor_]() mutable {
        boost::asio::post(executor,
                          [done = std::move(done)] { done(errc::store_unavailable, T{}); });
      });
      return;
    }
    T out{};
    std::error_code ec = apply(out);
    if (ec) out = T{};
    boost::asio::post(executor_, [done = std::move(done), ec, out = std::move(out)]() mutable {
      done(ec, std::move(out));
    });
  }

  std::shared_ptr<in_process_etcd::core> core_;
  boost::asio::any_io_executor executor_;
  std::uint64_t id_;
};

}  // namespace

namespace {

in_process_store_options checked(in_process_store_options o) {
  if (o.expiry_scan <= duration::zero())
    throw std::invalid_argument("in_process_etcd: expiry_scan must be positive");
  if (o.min_ttl <= duration::zero())
    throw std::invalid_argument("in_process_etcd: min_ttl must be positive");
  if (o.request_timeout < duration::zero())
    throw std::invalid_argument("in_process_etcd: request_timeout must not be negative");
  return o;
}

}  // namespace

in_process_etcd::in_process_etcd(std::shared_ptr<troupe::clock> clock,
                                 in_process_store_options options) {
  if (!clock) throw std::invalid_argument("in_process_etcd: no clock");
  core_ = std::make_shared<core>(std::move(clock), checked(options));
}

in_process_etcd::~in_process_etcd() = default;

std::shared_ptr<consensus_store> in_process_etcd::client(boost::asio::any_io_executor executor) {
  std::uint64_t id = 0;
  {
    std::lock_guard lock(core_->mutex);
    id = core_->next_client++;
  }
  return std::make_shared<model_client>(core_, std::move(executor), id);
}

void in_process_etcd::set_reachable(const consensus_store& client, bool reachable) {
  set_fault(core_->cut_clients, client, !reachable);
}

void in_process_etcd::set_answers_lost(const consensus_store& client, bool lost) {
  set_fault(core_->deaf_clients, client, lost);
}

void in_process_etcd::set_fault(std::vector<std::uint64_t>& clients, const consensus_store& client,
                                bool on) {
  const auto* c = dynamic_cast<const model_client*>(&client);
  if (c == nullptr || c->owner() != core_.get())
    throw std::invalid_argument("in_process_etcd: the store is not a client of this model");
  std::lock_guard lock(core_->mutex);
  std::erase(clients, c->id());
  if (!on) return;
  clients.push_back(c->id());
  // The connection is gone: its watches end now, as an etcd client's streams fail.
  const revision now = core_->space.current_revision();
  std::erase_if(core_->watches, [&](const std::shared_ptr<watch_feed>& w) {
    if (w->client() != c->id()) return false;
    w->end(errc::store_unavailable, now);
    return true;
  });
}

revision in_process_etcd::current_revision() const {
  std::lock_guard lock(core_->mutex);
  return core_->space.current_revision();
}

void in_process_etcd::compact(revision rev) {
  std::lock_guard lock(core_->mutex);
  core_->space.compact(rev);
}

std::shared_ptr<consensus_store> make_in_process_store(std::shared_ptr<troupe::clock> clock,
                                                       boost::asio::any_io_executor executor,
                                                       in_process_store_options options) {
  in_process_etcd etcd(std::move(clock), options);
  return etcd.client(std::move(executor));
}

}  // namespace troupe::cluster
