#include <troupe/cluster/ref_codec.hpp>

#include "node_core.hpp"

namespace troupe::cluster::detail {

namespace {
thread_local codec_scope* tls_scope = nullptr;
}  // namespace

codec_scope::codec_scope(node_core* c, peer* t, const node_id* f) : core(c), to(t), from(f) {
  tls_scope = this;
}
codec_scope::~codec_scope() { tls_scope = nullptr; }

const message_registry* registry_in_scope() noexcept {
  return tls_scope != nullptr ? tls_scope->core->options().registry.get() : nullptr;
}

void encode_actor_ref(persistence::byte_writer& w, const untyped_ref& ref) {
  if (tls_scope == nullptr || tls_scope->to == nullptr) {
    throw cluster_error(errc::invalid_address,
                        "an actor ref can only be serialized by the remoting, for another node");
  }
  if (!ref) {
    w.write_byte(std::byte{ref_empty});
    return;
  }
  tls_scope->core->encode_ref(w, ref.target(), tls_scope->to);
}

intrusive_ptr<actor_target> decode_actor_ref(persistence::byte_reader& r) {
  if (tls_scope == nullptr || tls_scope->from == nullptr) {
    throw cluster_error(errc::invalid_address,
                        "an actor ref can only be deserialized by the remoting, from another node");
  }
  return tls_scope->core->resolve_ref(read_ref(r), *tls_scope->from);
}

void node_core::encode_ref(persistence::byte_writer& w, actor_target* t, peer* to) {
  if (auto* remote = dynamic_cast<remote_target*>(t)) {
    // A ref to a third node's actor (or back to the peer's own).
    auto& owner = remote->target_peer();
    const node_id id{owner.address(),
                     remote->incarnation() != 0 ? remote->incarnation() : owner.incarnation()};
    write_ref(w, remote->temporary(), &id, remote->export_id(), remote->actor_path());
    return;
  }
  const exported& e = export_target(t);
  write_ref(w, e.temporary, nullptr, e.id, e.path);
  if (e.temporary) to->track_ask(intrusive_ptr<actor_target>(t));
}

intrusive_ptr<actor_target> node_core::resolve_ref(const wire_ref& ref, const node_id& sender) {
  if (ref.empty) return {};
  const node_id& owner = ref.owner ? *ref.owner : sender;
  if (owner.address == self_.address &&
      (owner.incarnation == self_.incarnation || owner.incarnation == 0)) {
    // One of ours coming home: the very target, so refs compare equal.
    auto local = resolve(recipient_spec{ref.export_id, ref.path});
    if (local) return local;
    // Stopped meanwhile: a ref that delivers to dead letters, as a stopped local one would.
    auto gone =
        intrusive_ptr<remote_target>(new remote_target(peer_at(self_.address), self_.incarnation,
                                                       ref.export_id, ref.path, ref.temporary),
                                     troupe::detail::adopt);
    gone->mark_terminated();
    return gone;
  }
  auto p = peer_at(owner.address);
  return p->target_for(owner.incarnation, ref.export_id, ref.path, ref.temporary);
}

}  // namespace troupe::cluster::detail
