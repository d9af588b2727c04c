#include "troupe/persistence/records.hpp"

#include <troupe/persistence/errc.hpp>

namespace troupe::persistence {

namespace {

[[noreturn]] void invalid(const std::string& why) {
  throw persistence_error(errc::invalid_request, why);
}

void require_manifest(const serialized& value, const char* what) {
  if (value.manifest.type_name.empty() || value.manifest.version == 0) {
    invalid(std::string(what) + " needs a manifest with a type name and a version >= 1");
  }
}

void require_shard(const std::string& type_name) {
  if (type_name.empty()) invalid("an entity type name must not be empty");
}

void validate_fence(const std::optional<fenced_shard>& s) {
  if (s) validate(*s);
}

}  // namespace

void validate(const std::string& persistence_id) {
  if (persistence_id.empty()) invalid("a persistence id must not be empty");
}

void validate(const append_request& r) {
  validate(r.persistence_id);
  if (r.expected_next == 0) invalid("sequence numbers start at 1 (" + r.persistence_id + ")");
  if (r.events.empty()) invalid("an append needs at least one event (" + r.persistence_id + ")");
  if (r.events.size() > max_sequence_nr - r.expected_next) {
    invalid("sequence numbers would overflow (" + r.persistence_id + ")");
  }
  for (const auto& e : r.events) require_manifest(e, "an event");
  validate_fence(r.shard_fence);
}

void validate(const read_request& r) { validate(r.persistence_id); }

void validate(const delete_events_request& r) { validate(r.persistence_id); }

void validate(const snapshot_write& w) {
  validate(w.persistence_id);
  require_manifest(w.state, "a snapshot");
  validate_fence(w.shard_fence);
}

void validate(const snapshot_query& q) { validate(q.persistence_id); }

void validate(const snapshot_delete& d) { validate(d.persistence_id); }

void validate(const state_write& w) {
  validate(w.persistence_id);
  require_manifest(w.value, "a durable state");
  validate_fence(w.shard_fence);
}

void validate(const state_delete& d) { validate(d.persistence_id); }

void validate(const remember_update& u) {
  require_shard(u.type_name);
  for (const auto& id : u.added) {
    if (id.empty()) invalid("a remembered entity id must not be empty");
  }
  if (u.shard_fence &&
      (u.shard_fence->type_name != u.type_name || u.shard_fence->shard != u.shard)) {
    invalid("a remember-entities update can only check its own shard's fence");
  }
}

void validate(const remember_query& q) { require_shard(q.type_name); }

void validate(const fenced_shard& s) { require_shard(s.type_name); }

void validate(const shard_fence_raise& r) { validate(r.shard); }

}  // namespace troupe::persistence
