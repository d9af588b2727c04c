#pragma once
// The maps behind the in-memory plugin, guarded by one mutex. Every write checks and updates
// the epoch fence of its key inside the same critical section, so a write is atomic with its
// fence check, as in the real stores.

#include <troupe/persistence/errc.hpp>
#include <troupe/persistence/records.hpp>

#include "persistence/shard_fence_refusal.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace troupe::persistence {

class memory_storage {
 public:
  struct journal_entry {
    sequence_nr highest = 0;
    std::map<sequence_nr, event_record> events;
  };
  using shard_key = std::pair<std::string, std::uint32_t>;

  std::mutex mutex;
  std::map<std::string, journal_entry> journals;
  std::map<std::string, std::map<sequence_nr, snapshot_record>> snapshots;
  std::map<std::string, durable_state_record> states;
  std::map<shard_key, std::set<std::string>> remembered;

  std::atomic<std::uint64_t> writes{0};

  /// Throws errc::epoch_fenced when `epoch` is below the fence of `persistence_id`; call with
  /// the mutex held, and raise_fence only once the write succeeds.
  void check_fence(const std::string& persistence_id, ownership_epoch epoch) const {
    check(entity_fences, persistence_id, epoch, persistence_id);
  }
  void raise_fence(const std::string& persistence_id, ownership_epoch epoch) {
    raise(entity_fences, persistence_id, epoch);
  }
  void check_fence(const shard_key& shard, ownership_epoch epoch) const {
    check(shard_fences, shard, epoch, shard.first + "/" + std::to_string(shard.second));
  }
  void raise_fence(const shard_key& shard, ownership_epoch epoch) {
    raise(shard_fences, shard, epoch);
  }

  /// Throws errc::epoch_fenced unless the owner fence of `shard` (when the write names one) is
  /// at `epoch`; call with the mutex held, before the write changes anything.
  void check_owner_fence(const std::optional<fenced_shard>& shard, ownership_epoch epoch) const {
    if (!shard) return;
    auto it = owner_fences.find({shard->type_name, shard->shard});
    auto fence = it == owner_fences.end() ? std::optional<ownership_epoch>{} : it->second;
    if (fence != epoch) throw owner_fence_refusal(*shard, epoch, fence);
  }
  /// Raises the owner fence of `shard` to `epoch` unless a newer one holds it.
  fence_raise raise_owner_fence(const fenced_shard& shard, ownership_epoch epoch) {
    auto [it, added] = owner_fences.try_emplace({shard.type_name, shard.shard}, epoch);
    if (!added && it->second > epoch) return fence_raise::superseded;
    it->second = epoch;
    return fence_raise::raised;
  }

 private:
  template <class Key>
  static void check(const std::map<Key, ownership_epoch>& fences, const Key& key,
                    ownership_epoch epoch, const std::string& name) {
    auto it = fences.find(key);
    if (it != fences.end() && epoch < it->second) {
      throw persistence_error(errc::epoch_fenced, "write to " + name + " with epoch " +
                                                      std::to_string(epoch) + " refused: epoch " +
                                                      std::to_string(it->second) + " has written");
    }
  }
  template <class Key>
  static void raise(std::map<Key, ownership_epoch>& fences, const Key& key, ownership_epoch epoch) {
    auto& fence = fences[key];
    if (epoch > fence) fence = epoch;
  }

  std::map<std::string, ownership_epoch> entity_fences;
  // The remember-entities store's fence per shard, raised by its own writes.
  std::map<shard_key, ownership_epoch> shard_fences;
  // The owners' shard fences, raised only by raise_owner_fence.
  std::map<shard_key, ownership_epoch> owner_fences;
};

}  // namespace troupe::persistence
