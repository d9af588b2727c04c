#include <troupe/core/actor.hpp>

#include "node_core.hpp"

namespace troupe::cluster::detail {

using persistence::byte_reader;

inbound::inbound(node_core& core, std::shared_ptr<stream> s)
    : core_(core), stream_(std::move(s)), decoder_(core.options().max_frame_size) {}

void inbound::start() {
  handshake_timer_.emplace(core_.io());
  handshake_timer_->expires_after(core_.options().handshake_timeout);
  handshake_timer_->async_wait([weak = weak_from_this()](std::error_code ec) {
    auto self = weak.lock();
    if (ec || !self || self->peer_) return;
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
  if (!decoder_.feed(bytes, [this](const wire::frame_view& f) {
        if (!closing_) on_frame(f);
      })) {
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
  peer_->heard_from();
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

void inbound::reply(wire::frame_kind kind, const std::function<void(byte_buffer&)>& fill) {
  wire::append_frame(pending_writes_, kind, fill);
  send_pending();
}

void inbound::send_pending() {
  if (writing_ || pending_writes_.empty()) return;
  writing_ = true;
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

actor_target* inbound::resolve_recipient(byte_reader& r, std::string& described) {
  const auto v = r.read_varint();
  if (v == 0) {
    auto spec = read_spec(r);
    described = spec.export_id != 0 ? "export #" + std::to_string(spec.export_id) : spec.path;
    auto t = core_.resolve(spec);
    if (!t) return nullptr;
    recipients_[0] = std::move(t);  // slot 0 holds a one-off recipient for this message only
    return recipients_[0].get();
  }
  const auto slot = static_cast<std::size_t>(v >> 1U);
  if ((v & 1U) != 0) {
    if (slot != recipient_names_.size() + 1 || slot > 1'000'000)
      r.fail("recipient slot out of order");
    auto spec = read_spec(r);
    recipient_names_.push_back(spec.export_id != 0 ? "#" + std::to_string(spec.export_id)
                                                   : spec.path);
    recipients_.resize(recipient_names_.size() + 1);  // index 0 is scratch for one-off specs
    recipients_[slot] = core_.resolve(spec);
  } else if (slot == 0 || slot > recipient_names_.size()) {
    r.fail("unknown recipient slot");
  }
  described = recipient_names_[slot - 1];
  if (!recipients_[slot] && !described.starts_with('#')) {
    recipients_[slot] = core_.resolve(recipient_spec{0, described});  // exposed later
  }
  return recipients_[slot].get();
}

void inbound::on_message(byte_reader& r) {
  core_.counters.received.fetch_add(1, std::memory_order_relaxed);
  std::string recipient_name;
  std::string manifest_name;
  std::span<const std::byte> raw;  // the payload, for a dead letter
  envelope_base* e = nullptr;
  intrusive_ptr<actor_target> sender;
  actor_target* recipient = nullptr;
  try {
    if (recipients_.empty()) recipients_.resize(1);
    recipient = resolve_recipient(r, recipient_name);
    const auto m = r.read_varint();
    const auto mslot = static_cast<std::size_t>(m >> 1U);
    if ((m & 1U) != 0) {
      if (mslot != manifests_.size() + 1) r.fail("manifest slot out of order");
      auto name = read_string(r);
      auto version = r.read_varint();
      if (version > UINT32_MAX) r.fail("manifest version out of range");
      manifests_.push_back(
          core_.options().registry->find(name, static_cast<std::uint32_t>(version)));
      manifest_names_.push_back("'" + name + "' v" + std::to_string(version));
    } else if (mslot == 0 || mslot > manifests_.size()) {
      r.fail("unknown manifest slot");
    }
    const auto* entry = manifests_[mslot - 1];
    manifest_name = manifest_names_[mslot - 1];
    codec_scope scope(&core_, nullptr, &from_);
    const auto has_sender = r.read_byte();
    if (has_sender == std::byte{1}) {
      sender = core_.decode_ref(r, from_);
    } else if (has_sender != std::byte{0}) {
      r.fail("bad sender flag");
    }
    raw = r.read_raw(r.remaining());
    if (entry == nullptr) {
      throw cluster_error(errc::unknown_manifest,
                          "no message type registered for manifest " + manifest_name);
    }
    e = entry->decode(raw);
  } catch (const std::exception& ex) {
    core_.counters.undecodable.fetch_add(1, std::memory_order_relaxed);
    std::string reason = "undecodable message from node " + to_string(from_) + " for " +
                         (recipient_name.empty() ? "<unknown recipient>" : recipient_name) + ": " +
                         ex.what();
    auto* letter = new troupe::detail::envelope<undecodable_message>(
        undecodable_message{from_, recipient_name, manifest_name, {raw.begin(), raw.end()}});
    letter->sender = sender;  // an ask among them fails at once
    core_.dead_letters().publish(letter, recipient_name.empty() ? "<unknown>" : recipient_name,
                                 make_error_code(errc::decode_error), reason);
    if (!recipients_.empty()) recipients_[0].reset();
    return;
  }
  e->sender = std::move(sender);
  if (recipient == nullptr) {
    core_.dead_letters().publish(
        e, recipient_name, make_error_code(troupe::errc::recipient_terminated),
        "no actor at " + recipient_name + " on this node (sent by " + to_string(from_) + ")");
  } else {
    recipient->enqueue_any(e);
  }
  recipients_[0].reset();
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
