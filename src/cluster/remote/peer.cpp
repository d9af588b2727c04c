#include <troupe/core/actor.hpp>

#include "node_core.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <utility>

namespace troupe::cluster::detail {

using troupe::detail::terminated_message;

peer::peer(std::shared_ptr<node_core> core, node_address address)
    : core_(std::move(core)),
      address_(std::move(address)),
      decoder_(core_->options().max_frame_size),
      backoff_(core_->options().reconnect_backoff_min) {}

// -- sending (any thread) -------------------------------------------------------------------

void peer::push(envelope_base* e, intrusive_ptr<remote_target> to) noexcept {
  outgoing item{e, std::move(to)};
  if (core_->closed()) {
    dead_letter(item, make_error_code(errc::node_unreachable), "the remoting is shut down");
    return;
  }
  if (item.to->is_terminated()) {
    dead_letter(item, make_error_code(troupe::errc::recipient_terminated),
                "the remote actor has stopped or its node restarted");
    return;
  }
  const auto& opts = core_->options();
  bool post = false;
  {
    std::unique_lock lock(mutex_);
    const std::size_t limit = connected_ ? opts.max_queued_connected : opts.max_queued_unconnected;
    // Following membership, an unreachable node only delays asks; one that left fails them.
    const bool left = left_;
    const bool gone = left || (unreachable_ && !core_->membership_decides());
    const bool ask_to_lost = gone && e->sender && e->sender->path().starts_with("/temp/");
    const bool full = queue_.size() + staged_count_ >= limit;
    // The bytes of what is staged; stage() checks each message's own size when it has one.
    const bool full_bytes = staged_bytes_ >= opts.max_queued_bytes;
    if (full || full_bytes || ask_to_lost) {
      lock.unlock();
      if (ask_to_lost) {
        dead_letter(
            item, make_error_code(left ? errc::node_left : errc::node_unreachable),
            "node " + to_string(address_) + (left ? " left the cluster" : " is unreachable"));
      } else {
        overflow(item, full ? std::to_string(limit) + " messages"
                            : std::to_string(opts.max_queued_bytes) + " bytes");
      }
      return;
    }
    queue_.push_back(std::move(item));
    post = !std::exchange(flush_posted_, true);
  }
  if (post) core_->post_io([self = shared_from_this()] { self->flush(); });
}

void peer::overflow(outgoing& item, const std::string& bound) noexcept {
  core_->counters.overflows.fetch_add(1, std::memory_order_relaxed);
  dead_letter(item, make_error_code(errc::peer_queue_full),
              "queue for node " + to_string(address_) + " is full (" + bound + ")");
}

void peer::dead_letter(outgoing& item, std::error_code code, const std::string& reason) noexcept {
  core_->dead_letters().publish(item.message, item.to->path(), code, reason);
  item.message = nullptr;
}

void peer::count_sent(std::size_t frames, std::size_t bytes) noexcept {
  frames_sent_.fetch_add(frames, std::memory_order_relaxed);
  bytes_sent_.fetch_add(bytes, std::memory_order_relaxed);
  core_->counters.frames_sent.fetch_add(frames, std::memory_order_relaxed);
  core_->counters.bytes_sent.fetch_add(bytes, std::memory_order_relaxed);
}

void peer::count_received(std::size_t frames, std::size_t bytes) noexcept {
  frames_received_.fetch_add(frames, std::memory_order_relaxed);
  bytes_received_.fetch_add(bytes, std::memory_order_relaxed);
  core_->counters.frames_received.fetch_add(frames, std::memory_order_relaxed);
  core_->counters.bytes_received.fetch_add(bytes, std::memory_order_relaxed);
}

// -- the outbound stream (I/O thread) -----------------------------------------------------

peer_status peer::status() {
  peer_status s;
  s.address = address_;
  s.incarnation = incarnation();
  s.bytes_sent = bytes_sent_.load(std::memory_order_relaxed);
  s.bytes_received = bytes_received_.load(std::memory_order_relaxed);
  s.frames_sent = frames_sent_.load(std::memory_order_relaxed);
  s.frames_received = frames_received_.load(std::memory_order_relaxed);
  s.connections = connections_.load(std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  s.connected = connected_;
  s.unreachable = unreachable_;
  s.queued_messages = queue_.size() + staged_count_;
  s.queued_bytes = staged_bytes_;
  return s;
}

void peer::flush() {
  {
    std::lock_guard lock(mutex_);
    flush_posted_ = false;
  }
  if (state_ == state::closed) return;
  if (state_ == state::idle) connect();
  if (state_ != state::up || writing_) {
    stage();
    return;
  }
  batch_.clear();
  {
    std::lock_guard lock(mutex_);
    batch_.swap(queue_);
    staged_count_ = 0;  // all of it goes out now
    staged_bytes_ = 0;
  }
  if (batch_.empty() && staged_.empty() && control_.empty()) return;
  byte_buffer out = std::move(spare_);
  out.clear();
  out.swap(control_);  // system frames first
  if (out.capacity() < 64 * 1024) out.reserve(64 * 1024);
  for (auto& s : staged_) {
    const auto tail = std::span<const std::byte>(staging_).subspan(s.offset, s.size);
    encode(s.item, *s.entry, out, &tail);
  }
  staged_.clear();
  staging_.clear();
  if (staging_.capacity() > 1024 * 1024) byte_buffer().swap(staging_);  // after a long stall
  for (auto& item : batch_) {
    if (bound_to_an_ended_run(item)) continue;
    if (const auto* entry = entry_of(item)) encode(item, *entry, out, nullptr);
  }
  batch_.clear();
  if (!out.empty()) write(std::move(out));
}

void peer::stage() {
  batch_.clear();
  {
    std::lock_guard lock(mutex_);
    batch_.swap(queue_);
    staged_count_ += batch_.size();  // still counted while being staged
  }
  if (batch_.empty()) return;
  const auto& opts = core_->options();
  for (auto& item : batch_) {
    if (bound_to_an_ended_run(item)) continue;
    const auto* entry = entry_of(item);
    if (entry == nullptr) continue;
    const std::size_t at = staging_.size();
    try {
      encode_tail(item, *entry, staging_);
    } catch (const std::exception& ex) {
      staging_.resize(at);
      dead_letter(item, make_error_code(errc::decode_error),
                  "cannot serialize for node " + to_string(address_) + ": " + ex.what());
      continue;
    } catch (...) {
      staging_.resize(at);
      dead_letter(item, make_error_code(errc::decode_error),
                  "cannot serialize for node " + to_string(address_) +
                      ": the codec threw an exception not derived from std::exception");
      continue;
    }
    const std::size_t size = staging_.size() - at;
    if (size > opts.max_frame_size) {
      staging_.resize(at);
      dead_letter(item, make_error_code(errc::decode_error),
                  "cannot serialize for node " + to_string(address_) +
                      ": frame payload of more than " + std::to_string(size) +
                      " bytes exceeds the maximum of " + std::to_string(opts.max_frame_size));
      continue;
    }
    if (staging_.size() > opts.max_queued_bytes) {
      staging_.resize(at);
      overflow(item, std::to_string(opts.max_queued_bytes) + " bytes");
      continue;
    }
    staged_.push_back(staged{std::move(item), entry, at, size});
  }
  batch_.clear();
  std::lock_guard lock(mutex_);
  staged_count_ = staged_.size();
  staged_bytes_ = staging_.size();
}

const message_registry::entry* peer::entry_of(outgoing& item) {
  // Most batches carry one or two types: skip the registry's hash for a repeat.
  const std::type_info& type = item.message->type();
  if (last_type_ == nullptr || *last_type_ != type) {
    last_type_ = &type;
    last_entry_ = core_->options().registry->find(type);
  }
  if (last_entry_ == nullptr) {
    dead_letter(
        item, make_error_code(errc::unknown_manifest),
        "no manifest registered for " + item.message->describe() + " (message_registry::add)");
  }
  return last_entry_;
}

bool peer::bound_to_an_ended_run(outgoing& item) {
  const std::uint64_t bound = item.to->incarnation();
  const std::uint64_t now = incarnation();
  if (bound == 0 || now == 0 || bound == now) return false;
  if (std::find(ended_runs_.begin(), ended_runs_.end(), bound) == ended_runs_.end()) return false;
  dead_letter(item, make_error_code(troupe::errc::recipient_terminated),
              "node " + to_string(address_) + " restarted (incarnation " + std::to_string(bound) +
                  " -> " + std::to_string(now) + "): the recipient was of the run that ended");
  return true;
}

void peer::encode_tail(outgoing& item, const message_registry::entry& entry, byte_buffer& out) {
  persistence::byte_writer w(out);
  codec_scope scope(core_.get(), this, nullptr);
  if (item.message->sender) {
    w.write_byte(std::byte{1});
    core_->encode_ref(w, item.message->sender.get(), this);
  } else {
    w.write_byte(std::byte{0});
  }
  entry.encode(w, item.message->payload());
}

void peer::encode(outgoing& item, const message_registry::entry& entry, byte_buffer& out,
                  const std::span<const std::byte>* tail) {
  // Everything that can fail (the sender ref, the payload, the size) happens before the slots
  // are committed: a refused message leaves the stream's slot tables as the receiver knows them.
  remote_target& to = *item.to;
  const bool new_recipient = !to.temporary() && (to.slot_stream != generation_ || to.slot == 0);
  const auto known_manifest = manifest_slots_.find(&entry);
  const bool new_manifest = known_manifest == manifest_slots_.end();
  const std::uint64_t manifest_slot =
      new_manifest ? manifest_slots_.size() + 1 : known_manifest->second;
  const std::size_t start = wire::begin_frame(out, wire::frame_kind::message);
  try {
    persistence::byte_writer w(out);
    if (to.temporary()) {
      w.write_varint(0);
      write_spec(w, to.spec());
    } else if (new_recipient) {
      w.write_varint((next_slot_ << 1U) | 1U);
      write_spec(w, to.spec());
    } else {
      w.write_varint(to.slot << 1U);
    }
    if (new_manifest) {
      w.write_varint((manifest_slot << 1U) | 1U);
      write_string(w, entry.manifest.type_name);
      w.write_varint(entry.manifest.version);
    } else {
      w.write_varint(manifest_slot << 1U);
    }
    if (tail != nullptr) {
      w.write_raw(*tail);
    } else {
      encode_tail(item, entry, out);
    }
    wire::end_frame(out, start, core_->options().max_frame_size);
  } catch (const std::exception& ex) {
    out.resize(start);
    dead_letter(item, make_error_code(errc::decode_error),
                std::string("cannot serialize for node ") + to_string(address_) + ": " + ex.what());
    return;
  } catch (...) {
    // A user codec may throw anything; the I/O thread must survive it.
    out.resize(start);
    dead_letter(item, make_error_code(errc::decode_error),
                "cannot serialize for node " + to_string(address_) +
                    ": the codec threw an exception not derived from std::exception");
    return;
  }
  if (new_recipient) {
    to.slot = next_slot_++;
    to.slot_stream = generation_;
  }
  if (new_manifest) manifest_slots_.emplace(&entry, manifest_slot);
  core_->counters.sent.fetch_add(1, std::memory_order_relaxed);
  ++unsent_frames_;
  delete item.message;
  item.message = nullptr;
}

void peer::drop_staged_if(const std::function<bool(const outgoing&)>& fail, std::error_code code,
                          const std::string& reason) {
  std::vector<staged> keep;
  byte_buffer bytes;
  for (auto& s : staged_) {
    if (fail(s.item)) {
      dead_letter(s.item, code, reason);
      continue;
    }
    const auto tail = std::span<const std::byte>(staging_).subspan(s.offset, s.size);
    s.offset = bytes.size();
    bytes.insert(bytes.end(), tail.begin(), tail.end());
    keep.push_back(std::move(s));
  }
  staged_.swap(keep);
  staging_.swap(bytes);
  std::lock_guard lock(mutex_);
  staged_count_ = staged_.size();
  staged_bytes_ = staging_.size();
}

void peer::write(byte_buffer bytes) {
  writing_ = true;
  count_sent(std::exchange(unsent_frames_, 0), bytes.size());
  stream_->async_write(std::move(bytes),
                       [self = shared_from_this(), gen = generation_](std::error_code ec) {
                         if (gen != self->generation_) return;
                         self->writing_ = false;
                         if (ec) {
                           self->drop_stream("write failed: " + ec.message(), false);
                           return;
                         }
                         self->flush();
                       });
}

void peer::send_system_frame(system_kind kind, std::uint64_t key, const recipient_spec* spec,
                             const std::string* reason) {
  const std::size_t start = wire::begin_frame(control_, wire::frame_kind::system);
  persistence::byte_writer w(control_);
  w.write_varint(static_cast<std::uint64_t>(kind));
  w.write_varint(key);
  if (spec != nullptr) write_spec(w, *spec);
  if (reason != nullptr) write_string(w, *reason);
  wire::end_frame(control_, start, core_->options().max_frame_size);
  ++unsent_frames_;
  if (state_ == state::idle) connect();
  if (state_ == state::up && !writing_) flush();
}

void peer::connect() {
  state_ = state::connecting;
  state_since_ = core_->now();
  ++generation_;
  core_->net().connect(address_, [self = shared_from_this(), gen = generation_](
                                     std::error_code ec, std::shared_ptr<stream> s) {
    if (gen != self->generation_ || self->state_ != state::connecting) {
      if (s) s->close();
      return;
    }
    if (ec) {
      self->drop_stream("connect failed: " + ec.message(), true);
      return;
    }
    self->on_stream(std::move(s));
  });
}

void peer::on_stream(std::shared_ptr<stream> s) {
  stream_ = std::move(s);
  state_ = state::handshaking;
  state_since_ = core_->now();
  decoder_ = wire::frame_decoder(core_->options().max_frame_size);
  next_slot_ = 1;
  manifest_slots_.clear();
  const auto gen = generation_;
  stream_->start(
      [self = shared_from_this(), gen](std::span<const std::byte> bytes) {
        if (gen != self->generation_) return;
        std::size_t frames = 0;
        const bool fed = self->decoder_.feed(bytes, [&](const wire::frame_view& f) {
          ++frames;
          self->on_frame(f);
        });
        self->count_received(frames, bytes.size());
        if (!fed) {
          self->core_->counters.frames_refused.fetch_add(1, std::memory_order_relaxed);
          troupe::logger()->warn("remote: closing the connection to {}: {}",
                                 to_string(self->address_), self->decoder_.error());
          self->drop_stream(self->decoder_.error(), false);
        }
      },
      [self = shared_from_this(), gen](std::error_code ec) {
        if (gen != self->generation_) return;
        self->drop_stream("connection closed: " + ec.message(), false);
      });
  handshake h{core_->options().cluster_name, wire::protocol_version, core_->self(), address_};
  byte_buffer out;
  const std::size_t start = wire::begin_frame(out, wire::frame_kind::handshake);
  persistence::byte_writer w(out);
  write_handshake(w, h);
  wire::end_frame(out, start);
  count_sent(1, out.size());
  writing_ = true;
  stream_->async_write(std::move(out), [self = shared_from_this(), gen](std::error_code ec) {
    if (gen != self->generation_) return;
    self->writing_ = false;
    if (ec) {
      self->drop_stream("handshake write failed: " + ec.message(), true);
    } else if (self->state_ == state::up) {
      self->flush();  // the answer came before this completion: send what waits
    }
  });
}

void peer::on_frame(const wire::frame_view& f) {
  heard_from();
  persistence::byte_reader r(f.payload);
  try {
    switch (f.kind) {
      case wire::frame_kind::handshake_accept: {
        if (state_ != state::handshaking) return;
        node_id id = read_node_id(r);
        observed(id);
        state_ = state::up;
        backoff_ = core_->options().reconnect_backoff_min;
        {
          std::lock_guard lock(mutex_);
          connected_ = true;
          unreachable_ = false;
          left_ = false;
        }
        connections_.fetch_add(1, std::memory_order_relaxed);
        troupe::logger()->debug("remote: connected to {}", to_string(id));
        // The watches kept across a lost connection are placed again: the peer may have
        // dropped them (it does when it declared us lost), and a repeated one changes nothing.
        for (const auto& [key, w] : watches_) {
          auto spec = w.watchee->spec();
          send_system_frame(system_kind::watch, key, &spec, nullptr);
        }
        flush();
        return;
      }
      case wire::frame_kind::handshake_refuse: {
        std::string reason = read_string(r);
        core_->counters.refused.fetch_add(1, std::memory_order_relaxed);
        troupe::logger()->error("remote: node {} refused our handshake: {}", to_string(address_),
                                reason);
        drop_stream("handshake refused: " + reason, true);
        return;
      }
      case wire::frame_kind::heartbeat_ack:
        return;
      default:
        drop_stream("unexpected frame on an outbound connection", false);
        return;
    }
  } catch (const std::exception& ex) {
    core_->counters.frames_refused.fetch_add(1, std::memory_order_relaxed);
    drop_stream(std::string("malformed frame: ") + ex.what(), false);
  }
}

void peer::drop_stream(const std::string& why, bool unreachable) {
  if (state_ == state::closed) return;
  const bool was_up = state_ == state::up;
  ++generation_;
  if (stream_) {
    stream_->close();
    stream_.reset();
  }
  writing_ = false;
  control_.clear();  // watches still wanted are placed again on the next handshake
  unsent_frames_ = 0;
  {
    std::lock_guard lock(mutex_);
    connected_ = false;
  }
  troupe::logger()->info("remote: connection to {} dropped: {}", to_string(address_), why);
  if (unreachable || !was_up) {
    // Never got through: the peer counts as unreachable for asks until a handshake succeeds.
    std::lock_guard lock(mutex_);
    unreachable_ = true;
  }
  if (unreachable) core_->counters.peers_unreachable.fetch_add(1, std::memory_order_relaxed);
  // Following membership, unreachability only delays: the watches and asks wait for the
  // connection, their timeouts, or node_left().
  if (unreachable && !core_->membership_decides() && (!watches_.empty() || !asks_.empty())) {
    lost(errc::node_unreachable, "node " + to_string(address_) + " is unreachable: " + why);
  }
  schedule_reconnect();
}

void peer::schedule_reconnect() {
  bool pending = false;
  {
    std::lock_guard lock(mutex_);
    pending = !queue_.empty();
  }
  pending = pending || !staged_.empty();
  // Asks waiting for replies need the peer too: failing to reconnect fails them at once.
  std::erase_if(asks_, [](const auto& a) { return a->is_terminated(); });
  if (!pending && watches_.empty() && asks_.empty()) {
    state_ = state::idle;
    return;
  }
  state_ = state::backoff;
  if (!reconnect_timer_) {
    reconnect_timer_ = std::make_unique<clock_timer>(core_->clock(), core_->io().get_executor());
  }
  const auto wait = backoff_;
  backoff_ = std::min(backoff_ * 2, core_->options().reconnect_backoff_max);
  reconnect_timer_->wait_for(wait, [self = shared_from_this()] {
    if (self->state_ != state::backoff) return;
    self->connect();
  });
}

void peer::heard_from() { last_heard_ = core_->now(); }

void peer::tick(time_point now) {
  const auto& opts = core_->options();
  // Answered (or timed out) since the peer left: nothing to fail any more.
  std::erase_if(handed_on_asks_, [](const auto& a) { return a->is_terminated(); });
  if (state_ == state::handshaking && now - state_since_ > opts.handshake_timeout) {
    drop_stream(
        "no handshake answer within " + std::to_string(opts.handshake_timeout.count()) + " ms",
        true);
    return;
  }
  if (state_ != state::up) return;
  if (now - last_heard_ > opts.unreachable_after) {
    drop_stream("silent for " + std::to_string(opts.unreachable_after.count()) + " ms", true);
    return;
  }
  const std::size_t start = wire::begin_frame(control_, wire::frame_kind::heartbeat);
  wire::end_frame(control_, start);
  ++unsent_frames_;
  if (!writing_) flush();
  // Asks whose reply came (or timed out) need no tracking any more.
  std::erase_if(asks_, [](const auto& a) { return a->is_terminated(); });
}

void peer::observed(const node_id& id) {
  // A late handshake of a run that already ended (its frames were still on their way) does not
  // make it the current run again.
  if (std::find(ended_runs_.begin(), ended_runs_.end(), id.incarnation) != ended_runs_.end()) {
    return;
  }
  const auto before = incarnation_.exchange(id.incarnation, std::memory_order_acq_rel);
  if (before != 0 && before != id.incarnation) {
    constexpr std::size_t remembered_runs = 8;
    ended_runs_.push_back(before);
    if (ended_runs_.size() > remembered_runs) ended_runs_.pop_front();
    {
      // A new run of the node answers at the address (it may have connected to us, while we
      // have sent it nothing yet): what left was the one before, so asks to it go through again.
      std::lock_guard lock(mutex_);
      left_ = false;
    }
    // Asks tracked since the old run left were sent after its leave, for this run: they wait
    // for its answers. (Those sent to the old run were failed or handed on when it left.)
    std::vector<intrusive_ptr<actor_target>> for_this_run;
    if (before == left_run_) for_this_run.swap(asks_);
    lost(errc::node_restarted, "node " + to_string(address_) + " restarted (incarnation " +
                                   std::to_string(before) + " -> " +
                                   std::to_string(id.incarnation) + ")");
    asks_ = std::move(for_this_run);
    // Refs of the new run may have come first, inside messages other nodes passed on: they live.
    std::erase_if(targets_, [&](auto& entry) {
      if (entry.second->incarnation() == id.incarnation) return false;
      entry.second->mark_terminated();
      return true;
    });
  }
}

void peer::close() {
  ++generation_;
  state_ = state::closed;
  if (stream_) stream_->close();
  stream_.reset();
  if (reconnect_timer_) reconnect_timer_->cancel();
  reconnect_timer_.reset();
  lost(errc::node_unreachable, "the remoting of this node shut down", true);
  std::vector<outgoing> rest;
  {
    std::lock_guard lock(mutex_);
    rest.swap(queue_);
    connected_ = false;
  }
  for (auto& item : rest)
    dead_letter(item, make_error_code(errc::node_unreachable), "the remoting is shut down");
  drop_staged_if([](const outgoing&) { return true; }, make_error_code(errc::node_unreachable),
                 "the remoting is shut down");
  targets_.clear();
}

}  // namespace troupe::cluster::detail
