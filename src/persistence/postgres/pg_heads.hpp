#pragma once
// The writer's knowledge of each persistence id, so that a group commit checks sequence numbers
// and epochs in memory and writes only the events (and states) themselves, and the fence
// generation that keeps that knowledge valid across processes.
//
// Several processes may write one schema. What they can change under each other is guarded so:
// - Fences and floors (fences.epoch, fences.highest) change only in a transaction that holds the
//   row of `fence_generation` exclusively and bumps its number. Every write transaction holds
//   that row (shared when it cannot change a fence), so no fence moves while a group runs, and a
//   changed number tells the writer that its cached fences and floors are stale.
// - The journal's highest sequence number moves with every append, without that lock. The cache
//   keeps the highest this writer saw, which is never above the truth: an append at a number that
//   another process has taken meets the journal's primary key, which refuses it (and the writer
//   redoes the group with one savepoint per write). Sequence numbers of deleted events stay
//   taken through the floor.
// - A durable state's revision is checked by the UPDATE or INSERT that writes it.

#include <troupe/persistence/records.hpp>

#include <pqxx/transaction_base>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace troupe::persistence::pg {

/// What the writer knows of one persistence id.
struct pid_head {
  /// The id's number in the journal (persistence_ids.id); 0 while it has none.
  std::int64_t number = 0;
  /// The epoch fence (fences.epoch; 0 without a row).
  ownership_epoch fence = 0;
  /// The journal's highest sequence number when its events were last deleted (fences.highest).
  sequence_nr floor = 0;
  /// The highest sequence number known to be taken (at least `floor` once known); another
  /// process may have appended more since.
  sequence_nr highest = 0;
  /// Whether `highest` was read from the journal (appends need it, other writes do not).
  bool highest_known = false;
  /// The cache stamp at which fence and floor were read; an older one is read again.
  std::uint64_t stamp = 0;
};

/// Which ids a group needs, and whether it needs their journal's highest.
struct head_wanted {
  std::string_view persistence_id;
  bool highest = false;
};

/// The heads the writer has read or written, valid for the fence generation it last locked.
class pid_heads {
 public:
  /// At most this many ids are kept after a commit; past it the cache starts again empty.
  static constexpr std::size_t max_entries = std::size_t{1} << 18;

  /// Whether a write with `epoch` could raise the fence of `pid`. A cached fence is never above
  /// the stored one, so a stale or missing entry errs towards yes.
  [[nodiscard]] bool may_raise(std::string_view pid, ownership_epoch epoch) const;

  /// Locks the fence generation for the open transaction (shared, or exclusive for a group that
  /// may change fences or floors). When another process changed it, every cached fence and floor
  /// goes stale.
  void lock_generation(pqxx::transaction_base& t, bool exclusive);
  /// Notes that the open transaction changed a fence or a floor (it holds the lock exclusively).
  void changed_fences() noexcept { changed_ = true; }
  /// Before COMMIT: bumps the generation when this transaction changed a fence or a floor.
  void before_commit(pqxx::transaction_base& t);
  /// After COMMIT: the cache matches the database as this transaction left it.
  void committed() noexcept;
  /// After a rollback, or when unsure what committed: forgets everything.
  void reset() noexcept;

  /// Reads, in one statement, what the wanted ids miss: stale fences and floors, and the
  /// journal's highest where wanted and not known.
  void load(pqxx::transaction_base& t, const std::vector<head_wanted>& wanted);
  /// One id's head, read first when missing or stale (with the journal's highest if asked).
  pid_head& get(pqxx::transaction_base& t, const std::string& pid, bool with_highest);
  /// Reads the journal's highest of `pid` again (an append expects more than the cache knows).
  void reload_highest(pqxx::transaction_base& t, pid_head& head);
  /// Gives the ids without a number one (persistence_ids), in one statement and one read.
  void number_ids(pqxx::transaction_base& t, std::vector<std::string> pids);
  /// Forgets one id (its append met a number another process had taken).
  void forget(const std::string& pid) { heads_.erase(pid); }

 private:
  [[nodiscard]] bool needs_read(std::string_view pid, bool with_highest) const;

  /// Looks up by std::string_view without building a string.
  struct text_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };

  std::unordered_map<std::string, pid_head, text_hash, std::equal_to<>> heads_;
  std::uint64_t stamp_ = 1;
  /// The generation the cached fences and floors belong to; none before the first lock.
  std::optional<std::int64_t> generation_;
  bool changed_ = false;
};

}  // namespace troupe::persistence::pg
