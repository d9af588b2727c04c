// What depends on a peer: remote watches of its actors, watches it placed on ours, asks waiting
// for its replies, refs to its actors; and what happens to them when the peer is lost.
#include <troupe/core/actor.hpp>

#include "node_core.hpp"

#include <boost/asio/post.hpp>

namespace troupe::cluster::detail {

using troupe::detail::terminated_message;

namespace {

/// An ask's message: its sender is the ask's temporary reply target.
bool is_ask(const outgoing& item) {
  return item.message->sender && item.message->sender->path().starts_with("/temp/");
}

}  // namespace

// -- what depends on the peer -----------------------------------------------------------

void peer::lost(errc why, const std::string& reason, bool shutting_down, bool keep_sent_asks) {
  if (!shutting_down) {
    core_->counters.peers_lost.fetch_add(1, std::memory_order_relaxed);
    troupe::logger()->warn("remote: {}", reason);
  }
  auto code = make_error_code(why);
  std::erase_if(handed_on_asks_, [](const auto& a) { return a->is_terminated(); });
  for (auto& ask : asks_) {
    if (ask->is_terminated()) continue;
    if (keep_sent_asks) {
      handed_on_asks_.push_back(std::move(ask));
    } else {
      ask->notify_undelivered(code, reason);
    }
  }
  asks_.clear();
  auto watches = std::move(watches_);
  watches_.clear();
  watch_keys_.clear();
  for (auto& [key, w] : watches) {
    const bool incarnation_gone = why == errc::node_restarted || why == errc::node_left;
    if (incarnation_gone && w.watchee->incarnation() != 0) w.watchee->mark_terminated();
    for (auto& watcher : w.watchers) watcher->send_system(new terminated_message(w.watchee));
  }
  for (auto& [key, local] : local_watches_) {
    local.first->send_system(new troupe::detail::unwatch_message(local.second));
  }
  local_watches_.clear();
  // Asks still queued fail now rather than at their timeout.
  // Unreachable: asks fail, tells wait for a reconnect. Restarted: what was bound to the old
  // incarnation fails, what is addressed by path goes to the new one.
  // Left: asks fail, and so does what was bound to the incarnation that left.
  auto fail = [&](const outgoing& item) {
    const bool ask = is_ask(item);
    if (why == errc::node_restarted) {
      return item.to->incarnation() != 0 && item.to->incarnation() != incarnation();
    }
    if (why == errc::node_left) return ask || item.to->incarnation() != 0;
    return ask;
  };
  fail_unsent_if(fail, code, reason);
}

void peer::fail_unsent_if(const std::function<bool(const outgoing&)>& fail, std::error_code code,
                          const std::string& reason) {
  std::vector<outgoing> keep;
  std::vector<outgoing> failed;
  {
    std::lock_guard lock(mutex_);
    for (auto& item : queue_) (fail(item) ? failed : keep).push_back(std::move(item));
    queue_.swap(keep);
  }
  for (auto& item : failed) dead_letter(item, code, reason);
  if (!staged_.empty()) drop_staged_if(fail, code, reason);
}

void peer::track_ask(intrusive_ptr<actor_target> promise) {
  const std::string& reason = core_->left_reason();
  if (reason.empty()) {
    asks_.push_back(std::move(promise));
  } else if (!promise->is_terminated()) {
    promise->notify_undelivered(make_error_code(errc::node_left), reason);
  }
}

void peer::fail_asks(const std::string& reason) {
  const auto code = make_error_code(errc::node_left);
  auto asks = std::move(asks_);
  asks_.clear();
  asks.insert(asks.end(), handed_on_asks_.begin(), handed_on_asks_.end());
  handed_on_asks_.clear();
  for (auto& ask : asks) {
    if (!ask->is_terminated()) ask->notify_undelivered(code, reason);
  }
  // Asks not sent yet (no connection, or staged): their answers would not come either.
  fail_unsent_if(is_ask, code, reason);
}

void peer::left(const std::string& reason, bool graceful) {
  {
    std::lock_guard lock(mutex_);
    left_ = true;
  }
  left_run_ = incarnation();
  // A node that left gracefully handled or passed on all it was sent: the replies to those
  // asks may still come, from the shards' new owners.
  lost(errc::node_left, reason, false, graceful);
  // The run that left ends; a newer run's refs that came first (passed on by another node)
  // live. Before any handshake the run is unknown: every ref ends.
  std::erase_if(targets_, [&](auto& entry) {
    if (left_run_ != 0 && entry.second->incarnation() != left_run_) return false;
    entry.second->mark_terminated();
    return true;
  });
}

void peer::rejoined() {
  // Only the mark: the next handshake meets the new run, and observed() ends what was bound to
  // the old one (its refs, and asks in flight, which fail as "restarted"). Forgetting the old
  // incarnation here would let a late ref of the old run reach the new run's actors.
  std::lock_guard lock(mutex_);
  left_ = false;
}

void peer::watch(intrusive_ptr<remote_target> watchee, intrusive_ptr<actor_target> watcher) {
  bool gone = false;
  {
    std::lock_guard lock(mutex_);
    gone = left_;
  }
  if (state_ == state::closed || gone || watchee->is_terminated()) {
    watcher->send_system(new terminated_message(std::move(watchee)));
    return;
  }
  auto [it, fresh] = watch_keys_.try_emplace(watchee.get(), next_watch_key_);
  if (fresh) {
    ++next_watch_key_;
    auto spec = watchee->spec();
    watches_[it->second] = remote_watch{watchee, {}};
    send_system_frame(system_kind::watch, it->second, &spec, nullptr);
  }
  auto& watchers = watches_[it->second].watchers;
  for (auto& w : watchers) {
    if (w == watcher) return;
  }
  watchers.push_back(std::move(watcher));
}

void peer::unwatch(remote_target* watchee, actor_target* watcher) {
  auto k = watch_keys_.find(watchee);
  if (k == watch_keys_.end()) return;
  auto& watchers = watches_[k->second].watchers;
  std::erase_if(watchers, [&](const auto& w) { return w.get() == watcher; });
  if (watchers.empty()) {
    send_system_frame(system_kind::unwatch, k->second, nullptr, nullptr);
    watches_.erase(k->second);
    watch_keys_.erase(k);
  }
}

void peer::on_terminated(std::uint64_t key) {
  auto it = watches_.find(key);
  if (it == watches_.end()) return;
  auto w = std::move(it->second);
  watches_.erase(it);
  watch_keys_.erase(w.watchee.get());
  w.watchee->mark_terminated();
  for (auto& watcher : w.watchers) watcher->send_system(new terminated_message(w.watchee));
}

namespace {
/// Stands in for a peer's watcher on a local actor: when the actor stops, tells the peer.
class watch_proxy final : public actor_target {
 public:
  watch_proxy(std::shared_ptr<peer> p, std::uint64_t key) : peer_(std::move(p)), key_(key) {}
  void enqueue(envelope_base* e) noexcept override { delete e; }
  void enqueue_any(envelope_base* e) noexcept override { delete e; }
  void send_system(system_message* m) noexcept override {
    if (dynamic_cast<terminated_message*>(m) != nullptr && !peer_->core().closed()) {
      peer_->core().post_io([p = peer_, key = key_] {
        p->unwatch_local(key);
        p->send_system_frame(system_kind::terminated, key, nullptr, nullptr);
      });
    }
    delete m;
  }
  [[nodiscard]] std::string path() const override {
    return "troupe://" + to_string(peer_->address()) + "/remote-watcher";
  }
  [[nodiscard]] troupe::detail::system_impl* owner() const noexcept override {
    return peer_->core().anchor()->owner();
  }
  [[nodiscard]] bool is_terminated() const noexcept override { return false; }

 private:
  std::shared_ptr<peer> peer_;
  std::uint64_t key_;
};
}  // namespace

void peer::watch_local(std::uint64_t key, const recipient_spec& spec) {
  if (local_watches_.contains(key)) return;  // placed again after a reconnect
  auto target = core_->resolve(spec);
  if (!target) {
    send_system_frame(system_kind::terminated, key, nullptr, nullptr);
    return;
  }
  auto proxy =
      intrusive_ptr<actor_target>(new watch_proxy(shared_from_this(), key), troupe::detail::adopt);
  local_watches_[key] = {target, proxy};
  target->send_system(new troupe::detail::watch_message(proxy));
}

void peer::unwatch_local(std::uint64_t key) {
  auto it = local_watches_.find(key);
  if (it == local_watches_.end()) return;
  it->second.first->send_system(new troupe::detail::unwatch_message(it->second.second));
  local_watches_.erase(it);
}

intrusive_ptr<remote_target> peer::target_for(std::uint64_t incarnation, std::uint64_t export_id,
                                              const std::string& path, bool temporary) {
  auto make = [&] {
    return intrusive_ptr<remote_target>(
        new remote_target(shared_from_this(), incarnation, export_id, path, temporary),
        troupe::detail::adopt);
  };
  if (temporary || export_id == 0) return make();
  auto& slot = targets_[export_id];
  if (!slot || slot->incarnation() != incarnation) slot = make();
  return slot;
}

}  // namespace troupe::cluster::detail
