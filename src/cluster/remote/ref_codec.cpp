#include <troupe/cluster/ref_codec.hpp>

#include "node_core.hpp"

namespace troupe::cluster::detail {

namespace {
thread_local codec_scope* tls_scope = nullptr;
constexpr std::uint8_t ref_empty = 4;
}  // namespace

codec_scope::codec_scope(node_core* c, peer* t, const node_id* f) : core(c), to(t), from(f) {
  tls_scope = this;
}
codec_scope::~codec_scope() { tls_scope = nullptr; }

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
  return tls_scope->core->decode_ref(r, *tls_scope->from);
}

void node_core::encode_ref(persistence::byte_writer& w, actor_target* t, peer* to) {
  if (auto* remote = dynamic_cast<remote_target*>(t)) {
    // A ref to a third node's actor (or back to the peer's own).
    std::uint8_t flags = remote->temporary() ? ref_temporary : 0;
    w.write_byte(static_cast<std::byte>(flags));
    auto& owner = remote->target_peer();
    write_node_id(w, node_id{owner.address(), remote->incarnation() != 0 ? remote->incarnation()
                                                                         : owner.incarnation()});
    w.write_varint(remote->export_id());
    write_string(w, remote->actor_path());
    return;
  }
  const exported& e = export_target(t);
  w.write_byte(static_cast<std::byte>(ref_on_sender | (e.temporary ? ref_temporary : 0)));
  w.write_varint(e.id);
  write_string(w, e.path);
  if (e.temporary) to->track_ask(intrusive_ptr<actor_target>(t));
}

intrusive_ptr<actor_target> node_core::decode_ref(persistence::byte_reader& r,
                                                  const node_id& sender) {
  auto flags = static_cast<std::uint8_t>(r.read_byte());
  if (flags == ref_empty) return {};
  if ((flags & ~(ref_on_sender | ref_temporary)) != 0) r.fail("unknown actor ref flags");
  node_id owner = (flags & ref_on_sender) != 0 ? sender : read_node_id(r);
  std::uint64_t export_id = r.read_varint();
  std::string path = read_string(r);
  if (export_id == 0 && path.empty()) r.fail("actor ref with neither export id nor path");
  if (owner.address == self_.address &&
      (owner.incarnation == self_.incarnation || owner.incarnation == 0)) {
    // One of ours coming home: the very target, so refs compare equal.
    auto local = resolve(recipient_spec{export_id, path});
    if (local) return local;
    // Stopped meanwhile: a ref that delivers to dead letters, as a stopped local one would.
    auto gone = intrusive_ptr<remote_target>(
        new remote_target(peer_at(self_.address), self_.incarnation, export_id, path,
                          (flags & ref_temporary) != 0),
        troupe::detail::adopt);
    gone->mark_terminated();
    return gone;
  }
  auto p = peer_at(owner.address);
  return p->target_for(owner.incarnation, export_id, path, (flags & ref_temporary) != 0);
}

}  // namespace troupe::cluster::detail
