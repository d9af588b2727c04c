#pragma once
/// Actor refs inside messages: a ref sent to another node still reaches its actor, and replies
/// to a sender travel back across nodes. Only the remoting can write or read a ref (it knows the
/// nodes involved); encoding one elsewhere, e.g. in a persisted event, throws cluster_error.

#include <troupe/cluster/errc.hpp>
#include <troupe/core/actor_ref.hpp>
#include <troupe/persistence/serialization/codec.hpp>

namespace troupe::cluster::detail {
void encode_actor_ref(persistence::byte_writer& w, const untyped_ref& ref);
troupe::detail::intrusive_ptr<troupe::detail::actor_target> decode_actor_ref(
    persistence::byte_reader& r);
}  // namespace troupe::cluster::detail

namespace troupe::persistence {

template <>
struct codec<troupe::untyped_ref> {
  static void encode(byte_writer& w, const troupe::untyped_ref& ref) {
    troupe::cluster::detail::encode_actor_ref(w, ref);
  }
  static troupe::untyped_ref decode(byte_reader& r) {
    return troupe::untyped_ref(troupe::cluster::detail::decode_actor_ref(r));
  }
};

template <class M>
struct codec<troupe::actor_ref<M>> {
  static void encode(byte_writer& w, const troupe::actor_ref<M>& ref) {
    troupe::cluster::detail::encode_actor_ref(w, ref);
  }
  static troupe::actor_ref<M> decode(byte_reader& r) {
    return troupe::actor_ref<M>(troupe::cluster::detail::decode_actor_ref(r));
  }
};

}  // namespace troupe::persistence
