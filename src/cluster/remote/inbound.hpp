#pragma once
/// INTERNAL. A stream another node opened to this one: its handshake, then the messages and
/// system frames it carries, each resolved through per-stream slot tables (protocol.hpp).

#include <troupe/cluster/wire/frame.hpp>
#include <troupe/persistence/serialization/wire.hpp>

#include "message_reader.hpp"
#include "peer.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace troupe::cluster::detail {

/// One stream a peer opened to us.
class inbound : public std::enable_shared_from_this<inbound> {
 public:
  inbound(node_core& core, std::shared_ptr<stream> s);
  void start();
  void close() { stream_->close(); }
  /// Whether its handshake named `run` as the stream's sender.
  [[nodiscard]] bool from_run(const node_id& run) const noexcept {
    return peer_ != nullptr && from_ == run;
  }
  /// Closes it without reading another frame: what it still holds goes unread.
  void retire() {
    closing_ = true;
    close();
  }

 private:
  void on_data(std::span<const std::byte> bytes);
  void on_frame(const wire::frame_view& f);
  void on_handshake(const wire::frame_view& f);
  void on_message(persistence::byte_reader& r);
  void on_system(persistence::byte_reader& r);
  void reply(wire::frame_kind kind, const std::function<void(byte_buffer&)>& fill);
  void refuse(const std::string& reason);
  void send_pending();
  /// Counts traffic on this stream: for its peer once the handshake named it, else for the node.
  void count(bool sent, std::size_t frames, std::size_t bytes);
  /// The target of a recipient slot, resolved on first use (a path exposed later, then).
  actor_target* recipient_at(std::size_t slot);
  /// The registry entry of a manifest slot; null when this node does not know the type.
  const message_registry::entry* manifest_at(std::size_t slot);
  /// A message that did not decode goes to dead letters, as an undecodable_message.
  void undecodable(const message_reader::header& h, const intrusive_ptr<actor_target>& sender,
                   const std::string& why);
  /// The stream's slot tables fell out of step (message_reader::out_of_step): closes it, so the
  /// peer connects again and both ends start with empty tables.
  void close_out_of_step(const std::string& why);

  node_core& core_;
  std::shared_ptr<stream> stream_;
  wire::frame_decoder decoder_;
  std::shared_ptr<peer> peer_;  // known after the handshake
  node_id from_;
  bool writing_ = false;
  bool closing_ = false;
  byte_buffer pending_writes_;
  std::size_t pending_frames_ = 0;                         // in pending_writes_
  message_reader reader_;                                  // the stream's slot tables
  std::vector<intrusive_ptr<actor_target>> recipients_;    // by slot - 1, as resolved
  std::vector<const message_registry::entry*> manifests_;  // by slot - 1
  std::optional<clock_timer> handshake_timer_;
};

}  // namespace troupe::cluster::detail
