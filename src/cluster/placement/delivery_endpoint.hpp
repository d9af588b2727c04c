#pragma once
/// How a region's messages reach a shard on another node: the sending region's placement
/// puts the message in a sharded_delivery and tells it to the owner's delivery endpoint,
/// `/system/cluster-deliveries`, which every node runs and exposes; the remoting encodes the
/// message under its own manifest and decodes it there. The endpoint hands it to the placement
/// of its type, which passes it to the region; the region delivers it only where its own placement
/// says the shard lives now (docs/cluster.md, "Routing across nodes"). Remoting keeps the order of
/// one sender's messages to one recipient, so a region's messages to a node arrive in the order it
/// sent them.

#include <troupe/cluster/cluster_messages.hpp>
#include <troupe/cluster/message_registry.hpp>
#include <troupe/cluster/remote_node.hpp>
#include <troupe/core/actor_system.hpp>
#include <troupe/core/detail/actor_target.hpp>

#include "cluster/named_directory.hpp"
#include "cluster/placement/cluster_placement.hpp"

#include <atomic>
#include <memory>
#include <string>

namespace troupe::cluster {

/// The path of every node's delivery endpoint.
inline constexpr const char* delivery_endpoint_path = "/system/cluster-deliveries";

/// The placements of this node's sharded types, by type; shared by the endpoint and the
/// cluster's wiring.
using placement_directory = named_directory<cluster_placement>;

/// Hands the messages other nodes' regions send here to the placements of their types. Not an
/// actor: it does its work on the thread that delivers the message (the inbound connection's,
/// which keeps each sender's order), with no mailbox or turn per message; it only hands on,
/// without blocking. A delivery it cannot hand on (a type not running here, another message
/// type) is a dead letter with the reason, as the remoting makes one it cannot decode (an
/// unknown manifest, bad bytes); nothing else is affected.
class delivery_endpoint final : public troupe::detail::actor_target {
 public:
  delivery_endpoint(troupe::detail::system_impl& system,
                    std::shared_ptr<const placement_directory> placements)
      : system_(system), placements_(std::move(placements)) {}

  /// A ref to a new endpoint.
  static untyped_ref start(actor_system& system,
                           std::shared_ptr<const placement_directory> placements);
  /// What comes after this is a dead letter (the node is going away).
  static void close(const untyped_ref& endpoint);

  void enqueue(troupe::detail::envelope_base* e) noexcept override;
  void enqueue_any(troupe::detail::envelope_base* e) noexcept override { enqueue(e); }
  void send_system(troupe::detail::system_message* m) noexcept override;
  [[nodiscard]] std::string path() const override { return delivery_endpoint_path; }
  [[nodiscard]] troupe::detail::system_impl* owner() const noexcept override { return &system_; }
  [[nodiscard]] bool is_terminated() const noexcept override {
    return closed_.load(std::memory_order_acquire);
  }

 private:
  void receive(sharded_delivery& d, const untyped_ref& sender,
               std::unique_ptr<troupe::detail::envelope_base>& in);
  void refuse(std::unique_ptr<troupe::detail::envelope_base> in, std::error_code code,
              std::string reason);

  troupe::detail::system_impl& system_;
  std::shared_ptr<const placement_directory> placements_;
  std::atomic<bool> closed_{false};
};

/// Refs to other nodes' delivery endpoints, one per address, made on first use. Messages and
/// flush markers for a node share one ref: they travel one path, in order.
class endpoint_refs;
std::shared_ptr<endpoint_refs> make_endpoint_refs(remote_node& remote);

/// The sender a cluster placement of `type` uses: encodes each message with `entry` (the
/// type's message type) and tells it to the delivery endpoint at the address. Throws
/// cluster_error (invalid_address, or what encoding throws) when it cannot.
remote_delivery deliver_over(std::shared_ptr<endpoint_refs> refs,
                             std::shared_ptr<const message_registry> registry,
                             const message_registry::entry& entry, std::string type);

/// The links a cluster placement of `type` hands its senders: each resolves the endpoint at
/// its address once and encodes every message as deliver_over() does.
remote_linker link_over(std::shared_ptr<endpoint_refs> refs,
                        std::shared_ptr<const message_registry> registry,
                        const message_registry::entry& entry, std::string type);

/// How a placement of `type` sends flush markers: to the endpoint at the address, answered to
/// `reply_to`, or to `self_endpoint` (this node's delivery endpoint) for its own.
flush_delivery flush_over(std::shared_ptr<endpoint_refs> refs, std::string type,
                          untyped_ref self_endpoint);

/// How a placement of `type` answers a flush marker.
flush_answer answer_flush_of(std::string type);

}  // namespace troupe::cluster
