#include "cluster/memory/memory_transport.hpp"

#include <troupe/cluster/errc.hpp>

#include "cluster/memory/link_state.hpp"
#include "cluster/memory/memory_stream.hpp"
#include "cluster/memory/network_core.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>

namespace troupe::cluster::detail {

namespace {

std::error_code aborted() {
  return boost::asio::error::make_error_code(boost::asio::error::operation_aborted);
}

}  // namespace

memory_transport::memory_transport(std::weak_ptr<network_core> network,
                                   boost::asio::any_io_executor ex)
    : network_(std::move(network)), executor_(std::move(ex)) {}

memory_transport::~memory_transport() { shutdown(); }

node_address memory_transport::listen(const node_address& at, accept_handler on_accept) {
  auto network = network_.lock();
  if (!network) {
    throw cluster_error(errc::transport_failure,
                        "cannot listen at " + to_string(at) + ": the memory network is gone");
  }
  std::lock_guard lock(mutex_);
  if (shut_down_) {
    throw cluster_error(errc::transport_failure,
                        "cannot listen at " + to_string(at) + ": the transport is shut down");
  }
  node_address bound = network->bind(at, weak_from_this());
  listeners_.push_back({bound, std::make_shared<const accept_handler>(std::move(on_accept))});
  if (!local_) local_ = bound;
  return bound;
}

std::optional<node_address> memory_transport::local_address(network_core& network) {
  std::lock_guard lock(mutex_);
  if (shut_down_) return std::nullopt;
  if (!local_) local_ = network.ephemeral_address();
  return local_;
}

void memory_transport::fail_later(connect_handler done, std::error_code ec) {
  boost::asio::post(executor_, [done = std::move(done), ec] { done(ec, nullptr); });
}

void memory_transport::connect(const node_address& peer, connect_handler done) {
  auto network = network_.lock();
  if (!network) return fail_later(std::move(done), errc::node_unreachable);
  const auto local = local_address(*network);
  if (!local) return fail_later(std::move(done), aborted());
  auto listener = network->listener_at(peer);
  if (!listener) return fail_later(std::move(done), errc::node_unreachable);

  auto out = network->link(*local, peer);
  auto back = network->link(peer, *local);
  if (out->blocked() && back->blocked()) {
    // Nothing answers across a full partition: fail when the connect would time out.
    network->clock()->schedule_after(
        network->connect_timeout(), [weak = weak_from_this(), done = std::move(done)] {
          auto self = weak.lock();
          if (!self) return;
          // Under the lock: once shut down, the executor may be gone.
          std::lock_guard lock(self->mutex_);
          if (self->shut_down_) return;
          boost::asio::post(self->executor_, [done] { done(errc::node_unreachable, nullptr); });
        });
    return;
  }

  auto c = std::make_shared<connection>(
      connection::end_point{executor_, *local, std::move(out)},
      connection::end_point{listener->executor(), peer, std::move(back)}, network->clock());
  if (!adopt(c, connection::connector)) return fail_later(std::move(done), aborted());
  if (!listener->accept(peer, c)) {
    c->close(connection::connector, false);
    return fail_later(std::move(done), errc::node_unreachable);
  }
  network->add_connection(c);
  boost::asio::post(executor_, [c = std::move(c), done = std::move(done)] {
    // The handle is made here, not before posting: if the executor is destroyed with this
    // handler unrun, dropping it must not close anything through a dead executor.
    done({}, std::make_shared<memory_stream>(c, connection::connector));
  });
}

bool memory_transport::accept(const node_address& at, const std::shared_ptr<connection>& c) {
  std::shared_ptr<const accept_handler> on_accept;
  {
    std::lock_guard lock(mutex_);
    if (shut_down_) return false;
    auto it = std::find_if(listeners_.begin(), listeners_.end(),
                           [&](const listener& l) { return l.address == at; });
    if (it == listeners_.end()) return false;
    on_accept = it->on_accept;
    remember_locked(c, connection::acceptor);
  }
  boost::asio::post(executor_, [self = weak_from_this(), c, on_accept = std::move(on_accept)] {
    auto alive = self.lock();
    // Shut down meanwhile: shutdown() has closed this end already.
    if (!alive || alive->is_shut_down()) return;
    (*on_accept)(std::make_shared<memory_stream>(c, connection::acceptor));
  });
  return true;
}

bool memory_transport::adopt(const std::shared_ptr<connection>& c, connection::side s) {
  std::lock_guard lock(mutex_);
  if (shut_down_) return false;
  remember_locked(c, s);
  return true;
}

void memory_transport::remember_locked(const std::shared_ptr<connection>& c, connection::side s) {
  // Closed streams leave expired entries behind; sweep them as the list doubles.
  if (ends_.size() >= prune_ends_at_) {
    std::erase_if(ends_, [](const auto& e) { return e.first.expired(); });
    prune_ends_at_ = std::max<std::size_t>(64, ends_.size() * 2);
  }
  ends_.emplace_back(c, s);
}

bool memory_transport::is_shut_down() {
  std::lock_guard lock(mutex_);
  return shut_down_;
}

void memory_transport::shutdown() {
  std::vector<listener> listeners;
  std::vector<std::pair<std::weak_ptr<connection>, connection::side>> ends;
  {
    std::lock_guard lock(mutex_);
    if (shut_down_) return;
    shut_down_ = true;
    listeners.swap(listeners_);
    ends.swap(ends_);
  }
  if (auto network = network_.lock()) {
    for (const auto& l : listeners) network->unbind(l.address, weak_from_this());
  }
  for (const auto& [weak, s] : ends) {
    if (auto c = weak.lock()) c->close(s, true);
  }
}

}  // namespace troupe::cluster::detail
