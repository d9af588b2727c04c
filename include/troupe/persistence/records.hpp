#pragma once
/// The values that go into and come out of the stores.

#include <troupe/persistence/serialization/manifest.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace troupe::persistence {

/// Position of an event in its persistence id's journal, from 1, without gaps.
using sequence_nr = std::uint64_t;
/// The writer's ownership epoch (per shard, supplied by the cluster; 0 on a single node). A store
/// refuses a write whose epoch is below the highest it has seen for the same id.
using ownership_epoch = std::uint64_t;

inline constexpr sequence_nr max_sequence_nr = std::numeric_limits<sequence_nr>::max();

/// A shard of a sharded type, as a shard fence names it. In a cluster the owner of a shard raises
/// its fence to the allocation's epoch (plugin::async_raise_shard_fence) before its entities
/// recover; each write of those entities names the shard, and commits only while the shard's
/// fence is at the write's epoch (see docs/persistence.md, "Shard fences").
struct fenced_shard {
  std::string type_name;
  /// The shard number (troupe::shard_id).
  std::uint32_t shard = 0;

  friend bool operator==(const fenced_shard&, const fenced_shard&) = default;
};

/// Raises a shard's fence to `epoch` (plugin::async_raise_shard_fence).
struct shard_fence_raise {
  fenced_shard shard;
  ownership_epoch epoch = 0;
};

/// What raising a shard fence found.
enum class fence_raise {
  /// A newer epoch holds the fence: a newer owner exists, and the caller gives the shard up.
  /// (First, so that a value-initialised answer never claims the shard.)
  superseded,
  /// The fence is now at the requested epoch (raised, or already there).
  raised,
};

/// Events to append atomically: all or none.
struct append_request {
  std::string persistence_id;
  /// The sequence number the first event gets; it must be the journal's highest + 1.
  sequence_nr expected_next = 1;
  std::vector<serialized> events;
  ownership_epoch epoch = 0;
  /// The shard whose fence the append checks at `epoch`; empty: no shard fence (single node).
  std::optional<fenced_shard> shard_fence;
};

/// A stored event.
struct event_record {
  sequence_nr sequence = 0;
  serialized event;
  /// The epoch of the write that stored it.
  ownership_epoch epoch = 0;

  friend bool operator==(const event_record&, const event_record&) = default;
};

/// A range of events to read, both ends included.
struct read_request {
  std::string persistence_id;
  sequence_nr from = 1;
  sequence_nr to = max_sequence_nr;
  std::size_t max_count = std::numeric_limits<std::size_t>::max();
};

/// A snapshot to save; saving the same (id, sequence) again replaces it.
struct snapshot_write {
  std::string persistence_id;
  /// The sequence number of the last event the snapshot includes.
  sequence_nr sequence = 0;
  serialized state;
  ownership_epoch epoch = 0;
  /// The shard whose fence the save checks at `epoch`; empty: no shard fence.
  std::optional<fenced_shard> shard_fence;
};

/// A stored snapshot.
struct snapshot_record {
  sequence_nr sequence = 0;
  serialized state;
  ownership_epoch epoch = 0;

  friend bool operator==(const snapshot_record&, const snapshot_record&) = default;
};

/// The revision of a durable state: 0 = no state stored, then 1, 2, ... per write.
using revision_nr = std::uint64_t;

/// A durable state to write when the stored revision is `expected_revision`.
struct state_write {
  std::string persistence_id;
  revision_nr expected_revision = 0;
  serialized value;
  ownership_epoch epoch = 0;
  /// The shard whose fence the write checks at `epoch`; empty: no shard fence.
  std::optional<fenced_shard> shard_fence;
};

/// A stored durable state.
struct durable_state_record {
  revision_nr revision = 0;
  serialized value;
  ownership_epoch epoch = 0;

  friend bool operator==(const durable_state_record&, const durable_state_record&) = default;
};

/// Entity ids to add to and remove from the remembered set of one shard, in one write.
struct remember_update {
  std::string type_name;
  /// The shard number (troupe::shard_id).
  std::uint32_t shard = 0;
  std::vector<std::string> added;
  std::vector<std::string> removed;
  ownership_epoch epoch = 0;
  /// When set, it must name this update's type and shard: the update then also checks that
  /// shard's fence at `epoch`. Empty: no shard fence.
  std::optional<fenced_shard> shard_fence;
};

/// What a plugin has written, to observe group commit.
struct write_stats {
  /// Write operations completed (successful or refused).
  std::uint64_t writes = 0;
  /// Transactions committed for them; fewer than `writes` when writes were grouped.
  std::uint64_t transactions = 0;
};

/// Deletes a journal's events up to and including `to` (the highest sequence number stays).
struct delete_events_request {
  std::string persistence_id;
  sequence_nr to = 0;
  ownership_epoch epoch = 0;
};

/// Asks for the latest snapshot at or below `max_sequence`.
struct snapshot_query {
  std::string persistence_id;
  sequence_nr max_sequence = max_sequence_nr;
};

/// Deletes the snapshots at or below `max_sequence`.
struct snapshot_delete {
  std::string persistence_id;
  sequence_nr max_sequence = max_sequence_nr;
  ownership_epoch epoch = 0;
};

/// Deletes a durable state when its stored revision is `expected_revision`.
struct state_delete {
  std::string persistence_id;
  revision_nr expected_revision = 0;
  ownership_epoch epoch = 0;
};

/// Names one shard's remembered entities.
struct remember_query {
  std::string type_name;
  std::uint32_t shard = 0;
};

/// Each throws persistence_error(errc::invalid_request) when the request cannot be valid for any
/// store: an empty persistence id or manifest, no events, sequence number 0, from > to...
void validate(const std::string& persistence_id);
void validate(const append_request& r);
void validate(const read_request& r);
void validate(const delete_events_request& r);
void validate(const snapshot_write& w);
void validate(const snapshot_query& q);
void validate(const snapshot_delete& d);
void validate(const state_write& w);
void validate(const state_delete& d);
void validate(const remember_update& u);
void validate(const remember_query& q);
void validate(const fenced_shard& s);
void validate(const shard_fence_raise& r);

}  // namespace troupe::persistence
