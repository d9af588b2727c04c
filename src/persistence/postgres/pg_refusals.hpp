#pragma once
// The refusals the writes of the PostgreSQL plugin raise, worded alike on every path.

#include <troupe/persistence/errc.hpp>
#include <troupe/persistence/records.hpp>

#include <string>

namespace troupe::persistence::pg {

inline persistence_error epoch_refusal(const std::string& name, ownership_epoch epoch,
                                       ownership_epoch fence) {
  return {errc::epoch_fenced, "write to " + name + " with epoch " + std::to_string(epoch) +
                                  " refused: epoch " + std::to_string(fence) + " has written"};
}

inline persistence_error sequence_refusal(const append_request& r, sequence_nr highest) {
  return {errc::sequence_conflict, "append to " + r.persistence_id + " expected next " +
                                       std::to_string(r.expected_next) + ", highest is " +
                                       std::to_string(highest)};
}

inline persistence_error revision_refusal(const std::string& pid, revision_nr stored,
                                          revision_nr expected) {
  return {errc::revision_conflict, "state " + pid + " is at revision " + std::to_string(stored) +
                                       ", expected " + std::to_string(expected)};
}

}  // namespace troupe::persistence::pg
