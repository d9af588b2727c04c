#pragma once
// The refusal of a write whose shard fence is not at its epoch, worded alike by every plugin.

#include <troupe/persistence/errc.hpp>
#include <troupe/persistence/records.hpp>

#include <optional>
#include <string>

namespace troupe::persistence {

/// errc::epoch_fenced for a write to `shard` at `epoch` while its fence is at `fence` (empty:
/// never raised, so the writer does not own the shard either).
inline persistence_error owner_fence_refusal(const fenced_shard& shard, ownership_epoch epoch,
                                             std::optional<ownership_epoch> fence) {
  return {errc::epoch_fenced, "write to shard " + std::to_string(shard.shard) + " of " +
                                  shard.type_name + " with epoch " + std::to_string(epoch) +
                                  " refused: " +
                                  (fence ? "the shard's fence is at epoch " + std::to_string(*fence)
                                         : std::string("the shard's fence was never raised"))};
}

}  // namespace troupe::persistence
