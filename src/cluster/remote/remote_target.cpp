#include "node_core.hpp"

#include <boost/asio/post.hpp>

namespace troupe::cluster::detail {

remote_target::remote_target(std::shared_ptr<peer> p, std::uint64_t incarnation,
                             std::uint64_t export_id, std::string path, bool temporary)
    : peer_(std::move(p)),
      incarnation_(incarnation),
      export_id_(export_id),
      path_(std::move(path)),
      temporary_(temporary) {}

void remote_target::enqueue(envelope_base* e) noexcept {
  peer_->push(e, intrusive_ptr<remote_target>(this));
}

void remote_target::send_system(system_message* m) noexcept {
  auto& core = peer_->core();
  if (auto* w = dynamic_cast<troupe::detail::watch_message*>(m); w != nullptr && !core.closed()) {
    core.post_io([p = peer_, self = intrusive_ptr<remote_target>(this),
                  watcher = std::move(w->watcher)]() mutable {
      p->watch(std::move(self), std::move(watcher));
    });
  } else if (auto* u = dynamic_cast<troupe::detail::unwatch_message*>(m);
             u != nullptr && !core.closed()) {
    core.post_io([p = peer_, self = intrusive_ptr<remote_target>(this),
                  watcher = std::move(u->watcher)] { p->unwatch(self.get(), watcher.get()); });
  } else if (w != nullptr) {
    w->on_undelivered(*this);  // the node is shut down: the watcher hears at once
  }
  delete m;
}

void remote_target::notify_undelivered(std::error_code /*code*/,
                                       const std::string& reason) noexcept {
  if (!temporary_ || peer_->core().closed()) return;
  try {
    peer_->core().post_io([p = peer_, id = export_id_, reason] {
      p->send_system_frame(system_kind::undeliverable, id, nullptr, &reason);
    });
  } catch (...) {  // out of memory: the ask then times out instead
  }
}

std::string remote_target::path() const {
  return "troupe://" + to_string(peer_->address()) + path_;
}

troupe::detail::system_impl* remote_target::owner() const noexcept {
  return peer_->core().anchor()->owner();
}

intrusive_ptr<actor_target> remote_target_for(node_core& core, const node_address& address,
                                              const std::string& path) {
  if (path.empty() || path.front() != '/') {
    throw cluster_error(errc::invalid_address, "actor path must start with '/': '" + path + "'");
  }
  return intrusive_ptr<actor_target>(new remote_target(core.peer_at(address), 0, 0, path, false),
                                     troupe::detail::adopt);
}

}  // namespace troupe::cluster::detail
