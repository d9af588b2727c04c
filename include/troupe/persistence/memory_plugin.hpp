#pragma once
/// The in-memory plugin, for tests: the four stores over maps in one process. It keeps the
/// contract of every plugin (atomic appends, conflicts, epoch fences) but nothing survives the
/// process. Operations complete at once, on the caller's executor.

#include <troupe/persistence/plugin.hpp>
#include <troupe/persistence/records.hpp>

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

/// For tests of corrupt-record handling: damages the stored event so reading it fails with
/// errc::corrupt_record. Returns false when there is no such event.
bool corrupt_stored_event(memory_storage& storage, const std::string& persistence_id,
                          sequence_nr sequence);

}  // namespace troupe::persistence
