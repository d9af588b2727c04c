#pragma once
/// INTERNAL. What a ref to an actor on another node points at.

#include <troupe/core/detail/actor_target.hpp>

#include "protocol.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace troupe::cluster::detail {

using troupe::detail::actor_target;
using troupe::detail::envelope_base;
using troupe::detail::intrusive_ptr;
using troupe::detail::system_message;

class node_core;
class peer;

/// The target of a ref to an actor on another node.
class remote_target final : public actor_target {
 public:
  remote_target(std::shared_ptr<peer> p, std::uint64_t incarnation, std::uint64_t export_id,
                std::string path, bool temporary);

  void enqueue(envelope_base* e) noexcept override;
  /// The receiving node checks and converts the type, so both sends are the same here.
  void enqueue_any(envelope_base* e) noexcept override { enqueue(e); }
  void send_system(system_message* m) noexcept override;
  /// A message with this target as its sender was lost on the way: an ask on the other node
  /// then fails at once.
  void notify_undelivered(std::error_code code, const std::string& reason) noexcept override;
  [[nodiscard]] std::string path() const override;
  [[nodiscard]] troupe::detail::system_impl* owner() const noexcept override;
  [[nodiscard]] bool is_terminated() const noexcept override {
    return terminated_.load(std::memory_order_acquire);
  }

  [[nodiscard]] peer& target_peer() const noexcept { return *peer_; }
  [[nodiscard]] std::uint64_t incarnation() const noexcept { return incarnation_; }
  [[nodiscard]] bool temporary() const noexcept { return temporary_; }
  [[nodiscard]] recipient_spec spec() const { return {export_id_, path_}; }
  [[nodiscard]] std::uint64_t export_id() const noexcept { return export_id_; }
  [[nodiscard]] const std::string& actor_path() const noexcept { return path_; }
  void mark_terminated() noexcept { terminated_.store(true, std::memory_order_release); }

  // I/O thread: the slot this recipient has on the peer's current outbound stream.
  std::uint64_t slot = 0;
  std::uint64_t slot_stream = 0;

 private:
  std::shared_ptr<peer> peer_;
  std::uint64_t incarnation_;  // 0: whichever incarnation runs there
  std::uint64_t export_id_;    // 0: addressed by path
  std::string path_;
  bool temporary_;
  std::atomic<bool> terminated_{false};
};

}  // namespace troupe::cluster::detail
