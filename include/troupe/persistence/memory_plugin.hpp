#pragma once
/// The in-memory plugin, for tests: the four stores over maps in one process. It keeps the
/// contract of every plugin (atomic appends, conflicts, epoch fences) but nothing survives the
/// process. Operations complete at once, on the caller's executor, unless a test injects write
/// faults (a failing or slow disk).

#include <troupe/core/clock.hpp>
#include <troupe/persistence/plugin.hpp>
#include <troupe/persistence/records.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace troupe::persistence {

/// The data of in-memory plugins. Several plugins opened over the same storage one after the
/// other see the same data, which stands in for reopening a database in tests.
class memory_storage;

/// Fresh, empty storage.
[[nodiscard]] std::shared_ptr<memory_storage> make_memory_storage();

/// An in-memory plugin over `storage`.
[[nodiscard]] std::unique_ptr<plugin> make_memory_plugin(
    std::shared_ptr<memory_storage> storage = make_memory_storage());

/// What an injected fault does to one journal append (a disk that fails or is slow).
struct write_fault {
  /// Writes nothing and fails the append with errc::store_failure (a refused write).
  bool fail = false;
  /// Writes the events, then fails the append with errc::store_failure: the answer is lost, and
  /// the writer cannot tell whether its events are stored.
  bool answer_lost = false;
  /// Does the write this much later, on the plugin's clock (a slow disk); zero: at once. The
  /// fences are checked when the write is done, as a real store checks them when it commits.
  std::chrono::nanoseconds delay{};
};

/// Decides the fault of each append, in the order the appends arrive.
using write_fault_policy = std::function<write_fault(const append_request&)>;

/// An in-memory plugin over `storage` whose appends suffer the faults `faults` decides, delays
/// running on `clock`. Destroying it fails the appends it still delays with errc::store_closed.
[[nodiscard]] std::unique_ptr<plugin> make_memory_plugin(std::shared_ptr<memory_storage> storage,
                                                         write_fault_policy faults,
                                                         std::shared_ptr<troupe::clock> clock);

/// For tests of corrupt-record handling: damages the stored event so reading it fails with
/// errc::corrupt_record. Returns false when there is no such event.
bool corrupt_stored_event(memory_storage& storage, const std::string& persistence_id,
                          sequence_nr sequence);

}  // namespace troupe::persistence
