#pragma once
/// Mailbox choices: unbounded (the default) or bounded with an explicit overflow policy.

#include <troupe/core/entity_identity.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>

namespace troupe {

/// What a full bounded mailbox does with one more message. Every rejected or dropped message
/// is counted and reaches dead letters.
enum class overflow_policy {
  /// The send is refused: try_tell returns errc::mailbox_full, `co_await send()` throws
  /// troupe::error; tell (which never reports) sends the message to dead letters.
  fail,
  /// The message goes to dead letters and no form of send tells the sender.
  drop,
  /// `co_await ref.send(msg)` waits for room; try_tell returns errc::mailbox_full and tell
  /// sends to dead letters (plain calls cannot wait).
  suspend,
};

struct mailbox_config {
  /// 0 means unbounded.
  std::size_t capacity = 0;
  overflow_policy overflow = overflow_policy::fail;

  static mailbox_config unbounded() { return {}; }
  static mailbox_config bounded(std::size_t capacity, overflow_policy overflow) {
    return {capacity, overflow};
  }
};

/// How to spawn an actor: its name (empty for a generated one), mailbox and entity identity.
struct spawn_options {
  std::string name;
  mailbox_config mailbox{};

  spawn_options() = default;
  spawn_options(const char* n) : name(n) {}             // NOLINT(google-explicit-constructor)
  spawn_options(std::string n) : name(std::move(n)) {}  // NOLINT(google-explicit-constructor)
  spawn_options(std::string_view n) : name(n) {}        // NOLINT(google-explicit-constructor)

  /// Marks the actor as a sharded entity with this identity (context().entity(), entity_id()).
  /// Sharding sets it; tests use it to run an entity alone, without sharding.
  std::optional<detail::entity_tag> entity;
  /// The caller guarantees that no live sibling has this name, so the parent keeps no index
  /// entry for it (child(name) then finds it by a scan). Sharding spawns entities this way:
  /// their shard already indexes them by id.
  bool unique_name = false;

  spawn_options& with_mailbox(mailbox_config m) {
    mailbox = m;
    return *this;
  }
  spawn_options& with_entity(const entity_identity& identity) {
    entity = detail::entity_tag{identity.entity_id,
                                &detail::intern_entity_home(identity.type_name, identity.shard_id)};
    return *this;
  }
  spawn_options& with_entity(detail::entity_tag tag) {
    entity = std::move(tag);
    return *this;
  }
  spawn_options& with_unique_name() {
    unique_name = true;
    return *this;
  }
};

}  // namespace troupe
