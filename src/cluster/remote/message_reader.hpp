#pragma once
/// INTERNAL. The pure half of reading a message frame (protocol.hpp, "message"): the recipient
/// and the manifest through one stream's slot tables, the sender ref and the payload's bytes.
/// It touches no actors or registry, so the fuzzer drives it as it is; inbound.cpp resolves
/// what it returns.

#include <troupe/persistence/serialization/wire.hpp>

#include "protocol.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace troupe::cluster::detail {

/// A manifest as a stream defines it.
struct manifest_name {
  std::string type_name;
  std::uint32_t version = 0;
};

/// The slot tables of one stream and the reading of its message frames.
class message_reader {
 public:
  /// Most slots of each kind one stream may define, so a peer cannot grow the tables unbounded.
  static constexpr std::size_t max_slots = 1'000'000;

  /// One message frame's parts, filled in order as they are read.
  struct header {
    bool has_recipient = false;
    std::size_t recipient_slot = 0;  // 0: a one-off recipient, in `one_off`
    recipient_spec one_off;
    std::size_t manifest_slot = 0;  // 0 until read
    std::optional<wire_ref> sender;
    std::span<const std::byte> payload;
  };

  /// Reads one message frame's payload into `h` (fresh). Slots are defined as their definitions
  /// are read, and stay defined when a later part of the frame is malformed: the sender counts
  /// them once the frame is written. Throws persistence_error on malformed bytes; `h` then holds
  /// the parts read before.
  void read(persistence::byte_reader& r, header& h);

  /// Whether a frame named a slot these tables cannot match (one never defined, or a
  /// definition out of order): a write of the stream was lost, and no later frame that uses
  /// slots can be read right. TCP loses none inside a live stream; a peer that does is closed.
  [[nodiscard]] bool out_of_step() const noexcept { return out_of_step_; }

  /// Slots defined so far; slots are numbered from 1.
  [[nodiscard]] std::size_t recipients() const noexcept { return recipients_.size(); }
  [[nodiscard]] std::size_t manifests() const noexcept { return manifests_.size(); }
  [[nodiscard]] const recipient_spec& recipient(std::size_t slot) const {
    return recipients_.at(slot - 1);
  }
  [[nodiscard]] const manifest_name& manifest(std::size_t slot) const {
    return manifests_.at(slot - 1);
  }

  /// How a recipient or a manifest is named in a dead letter.
  static std::string describe(const recipient_spec& spec);
  static std::string describe(const manifest_name& m);
  /// The recipient of `h` (read by now), as describe() names it.
  [[nodiscard]] std::string describe_recipient(const header& h) const;

 private:
  [[noreturn]] void out_of_step(const persistence::byte_reader& r, const std::string& why);

  bool out_of_step_ = false;
  std::vector<recipient_spec> recipients_;
  std::vector<manifest_name> manifests_;
};

}  // namespace troupe::cluster::detail
