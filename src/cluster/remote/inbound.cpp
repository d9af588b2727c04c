#include <troupe/core/actor.hpp>

#include "node_core.hpp"

namespace troupe::cluster::detail {

using persistence::byte_reader;

inbound::inbound(node_core& core, std::shared_ptr<stream> s)
    : core_(core), stream_(std::move(s)), decoder_(core.options().max_frame_size) {}

void inbound::start() {
  handshake_timer_.emplace(core_.clock(), core_.io().get_executor());
  handshake_timer_->wait_for(core_.options().handshake_timeout, [weak = weak_from_this()] {
    auto self = weak.lock();
    if (!self || self->peer_) return;
    troupe::logger()->warn("remote: no handshake from {} within {} ms, closing",
                           self->stream_->describe(),
                           self->core_.options().handshake_timeout.count());
    self->close();
  });
  // The stream keeps its handlers: they hold us weakly, the node holds us until the end.
  stream_->start(
      [weak = weak_from_this()](std::span<const std::byte> bytes) {
        if (auto self = weak.lock()) self->on_data(bytes);
      },
      [weak = weak_from_this()](std::error_code /*ec*/) {
        auto self = weak.lock();
        if (!self) return;
        self->closing_ = true;
        if (self->handshake_timer_) self->handshake_timer_->cancel();
        self->core_.forget(self.get());
      });
}

void inbound::on_data(std::span<const std::byte> bytes) {
  if (closing_) return;
  std::size_t frames = 0;
  const bool fed = decoder_.feed(bytes, [this, &frames](const wire::frame_view& f) {
    ++frames;
    if (!closing_) on_frame(f);
  });
  count(false, frames, bytes.size());
  // Once per read, not per frame: a read holds many frames, and the time is all heartbeats need.
  if (peer_) peer_->heard_from();
  if (!fed) {
    core_.counters.frames_refused.fetch_add(1, std::memory_order_relaxed);
    troupe::logger()->warn("remote: closing the connection from {}: {}",
                           peer_ ? to_string(from_) : stream_->describe(), decoder_.error());
    closing_ = true;
    close();
  }
}

void inbound::on_frame(const wire::frame_view& f) {
  if (!peer_) {
    if (f.kind != wire::frame_kind::handshake) {
      refuse("the first frame must be a handshake");
      return;
    }
    on_handshake(f);
    return;
  }
  byte_reader r(f.payload);
  switch (f.kind) {
    case wire::frame_kind::message:
      on_message(r);
      return;
    case wire::frame_kind::system:
      try {
        on_system(r);
      } catch (const std::exception& ex) {
        core_.counters.undecodable.fetch_add(1, std::memory_order_relaxed);
        troupe::logger()->warn("remote: malformed system frame from {}: {}", to_string(from_),
                               ex.what());
      }
      return;
    case wire::frame_kind::heartbeat:
      reply(wire::frame_kind::heartbeat_ack, [](byte_buffer&) {});
      return;
    default:
      core_.counters.frames_refused.fetch_add(1, std::memory_order_relaxed);
      troupe::logger()->warn("remote: unexpected frame kind {} from {}, closing",
                             static_cast<unsigned>(f.kind), to_string(from_));
      closing_ = true;
      close();
      return;
  }
}

void inbound::on_handshake(const wire::frame_view& f) {
  handshake h;
  try {
    byte_reader r(f.payload);
    h = read_handshake(r);
    r.expect_end();
  } catch (const std::exception& ex) {
    refuse(std::string("malformed handshake: ") + ex.what());
    return;
  }
  const auto& self = core_.self();
  if (h.cluster != core_.options().cluster_name) {
    refuse("cluster name '" + h.cluster + "' is not ours ('" + core_.options().cluster_name + "')");
    return;
  }
  if (h.protocol != wire::protocol_version) {
    refuse("protocol version " + std::to_string(h.protocol) + " is not ours (" +
           std::to_string(wire::protocol_version) + ")");
    return;
  }
  if (h.to.port != self.address.port ||
      (h.to.host != self.address.host && self.address.host != "0.0.0.0" &&
       self.address.host != "::")) {
    refuse("addressed to " + to_string(h.to) + ", but this node is " + to_string(self.address));
    return;
  }
  if (h.from.incarnation == 0) {
    refuse("incarnation 0 is invalid");
    return;
  }
  from_ = h.from;
  if (!core_.supersede(*this, h.from)) {
    // A later stream of the same run is up already: this one was given up by its sender, and
    // its frames, held back on the way, would overtake nothing only by chance.
    troupe::logger()->debug("remote: {} opened a newer stream than {}, closing it",
                            to_string(h.from), stream_->describe());
    retire();
    return;
  }
  peer_ = core_.peer_at(h.from.address);
  peer_->observed(h.from);
  peer_->heard_from();
  handshake_timer_->cancel();
  reply(wire::frame_kind::handshake_accept, [&](byte_buffer& out) {
    persistence::byte_writer w(out);
    write_node_id(w, self);
  });
  troupe::logger()->debug("remote: accepted {} from {}", to_string(h.from), stream_->describe());
}

void inbound::refuse(const std::string& reason) {
  core_.counters.refused.fetch_add(1, std::memory_order_relaxed);
  troupe::logger()->error("remote: refusing the connection from {}: {}", stream_->describe(),
                          reason);
  reply(wire::frame_kind::handshake_refuse, [&](byte_buffer& out) {
    persistence::byte_writer w(out);
    write_string(w, reason);
  });
  closing_ = true;  // close once the refusal is written
}

void inbound::count(bool sent, std::size_t frames, std::size_t bytes) {
  if (peer_) {
    sent ? peer_->count_sent(frames, bytes) : peer_->count_received(frames, bytes);
    return;
  }
  // Before the handshake names the peer, the traffic counts only in the node's totals.
  auto& c = core_.counters;
  (sent ? c.frames_sent : c.frames_received).fetch_add(frames, std::memory_order_relaxed);
  (sent ? c.bytes_sent : c.bytes_received).fetch_add(bytes, std::memory_order_relaxed);
}

void inbound::reply(wire::frame_kind kind, const std::function<void(byte_buffer&)>& fill) {
  wire::append_frame(pending_writes_, kind, fill);
  ++pending_frames_;
  send_pending();
}

void inbound::send_pending() {
  if (writing_ || pending_writes_.empty()) return;
  writing_ = true;
  count(true, std::exchange(pending_frames_, 0), pending_writes_.size());
  stream_->async_write(std::exchange(pending_writes_, {}),
                       [self = shared_from_this()](std::error_code ec) {
                         self->writing_ = false;
                         if (ec || (self->closing_ && self->pending_writes_.empty())) {
                           self->close();
                           return;
                         }
                         self->send_pending();
                       });
}

actor_target* inbound::recipient_at(std::size_t slot) {
  if (recipients_.size() < reader_.recipients()) recipients_.resize(reader_.recipients());
  auto& target = recipients_[slot - 1];
  if (!target) target = core_.resolve(reader_.recipient(slot));
  return target.get();
}

const message_registry::entry* inbound::manifest_at(std::size_t slot) {
  while (manifests_.size() < reader_.manifests()) {
    const auto& m = reader_.manifest(manifests_.size() + 1);
    manifests_.push_back(core_.options().registry->find(m.type_name, m.version));
  }
  return manifests_[slot - 1];
}

void inbound::undecodable(const message_reader::header& h,
                          const intrusive_ptr<actor_target>& sender, const std::string& why) {
  core_.counters.undecodable.fetch_add(1, std::memory_order_relaxed);
  const std::string recipient_name =
      h.has_recipient ? reader_.describe_recipient(h) : std::string();
  const std::string manifest_name =
      h.manifest_slot != 0 ? message_reader::describe(reader_.manifest(h.manifest_slot)) : "";
  std::string reason = "undecodable message from node " + to_string(from_) + " for " +
                       (recipient_name.empty() ? "<unknown recipient>" : recipient_name) + ": " +
                       why;
  auto* letter = new troupe::detail::envelope<undecodable_message>(undecodable_message{
      from_, recipient_name, manifest_name, {h.payload.begin(), h.payload.end()}});
  letter->sender = sender;  // an ask among them fails at once
  core_.dead_letters().publish(letter, recipient_name.empty() ? "<unknown>" : recipient_name,
                               make_error_code(errc::decode_error), reason);
}

void inbound::close_out_of_step(const std::string& why) {
  core_.counters.frames_refused.fetch_add(1, std::memory_order_relaxed);
  troupe::logger()->warn(
      "remote: closing the connection from {}: {} (a write was lost; it connects again with "
      "fresh slot tables)",
      to_string(from_), why);
  closing_ = true;
  close();
}

void inbound::on_message(byte_reader& r) {
  core_.counters.received.fetch_add(1, std::memory_order_relaxed);
  message_reader::header h;
  envelope_base* e = nullptr;
  intrusive_ptr<actor_target> sender;
  intrusive_ptr<actor_target> one_off;  // a recipient for this message only
  actor_target* recipient = nullptr;
  try {
    reader_.read(r, h);
    if (h.recipient_slot == 0) {
      one_off = core_.resolve(h.one_off);
      recipient = one_off.get();
    } else {
      recipient = recipient_at(h.recipient_slot);
    }
    const auto* entry = manifest_at(h.manifest_slot);
    codec_scope scope(&core_, nullptr, &from_);
    if (h.sender) sender = core_.resolve_ref(*h.sender, from_);
    if (entry == nullptr) {
      throw cluster_error(errc::unknown_manifest,
                          "no message type registered for manifest " +
                              message_reader::describe(reader_.manifest(h.manifest_slot)));
    }
    e = entry->decode(h.payload);
  } catch (const std::exception& ex) {
    undecodable(h, sender, ex.what());
    if (reader_.out_of_step()) close_out_of_step(ex.what());
    return;
  } catch (...) {
    // A user codec may throw anything; the I/O thread must survive it.
    undecodable(h, sender, "the codec threw an exception not derived from std::exception");
    return;
  }
  e->sender = std::move(sender);
  if (recipient == nullptr) {
    const auto recipient_name = reader_.describe_recipient(h);
    core_.dead_letters().publish(
        e, recipient_name, make_error_code(troupe::errc::recipient_terminated),
        "no actor at " + recipient_name + " on this node (sent by " + to_string(from_) + ")");
  } else {
    recipient->enqueue_any(e);
  }
}

void inbound::on_system(byte_reader& r) {
  const auto kind = static_cast<system_kind>(r.read_varint());
  const auto key = r.read_varint();
  switch (kind) {
    case system_kind::watch:
      peer_->watch_local(key, read_spec(r));
      return;
    case system_kind::unwatch:
      peer_->unwatch_local(key);
      return;
    case system_kind::terminated:
      peer_->on_terminated(key);
      return;
    case system_kind::undeliverable: {
      // A message sent with one of our asks as its sender did not arrive: fail the ask now.
      auto reason = read_string(r);
      if (auto t = core_.resolve(recipient_spec{key, {}})) {
        t->notify_undelivered(make_error_code(troupe::errc::recipient_terminated), reason);
      }
      return;
    }
  }
  r.fail("unknown system frame kind");
}

}  // namespace troupe::cluster::detail
