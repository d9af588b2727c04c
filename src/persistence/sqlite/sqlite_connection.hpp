#pragma once
// A thin RAII layer over the SQLite C API: a connection with a cache of prepared statements, and
// statement handles whose column getters check types, so a damaged row raises
// errc::corrupt_record instead of being misread. One connection is used by one thread only.

#include <troupe/persistence/errc.hpp>
#include <troupe/persistence/serialization/wire.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

struct sqlite3;
struct sqlite3_stmt;

namespace troupe::persistence::sqlite {

class connection;

/// A prepared statement borrowed from a connection's cache; reset and unbound when it goes.
class statement {
 public:
  statement(connection& owner, sqlite3_stmt* stmt) noexcept : owner_(owner), stmt_(stmt) {}
  ~statement();
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;

  statement& bind(int index, std::int64_t value);
  /// Binds an unsigned number; above INT64_MAX is refused (SQLite integers are signed).
  statement& bind_unsigned(int index, std::uint64_t value);
  statement& bind(int index, std::string_view text);
  statement& bind(int index, std::span<const std::byte> blob);

  /// Steps once: true when a row is ready, false when done.
  bool step();
  /// Steps to completion, for statements that return no rows.
  void run();

  // Column getters: throw errc::corrupt_record naming `what` when the stored type is wrong.
  [[nodiscard]] std::int64_t integer(int column, const char* what) const;
  /// An integer that must be in [min, max].
  [[nodiscard]] std::uint64_t unsigned_integer(int column, const char* what, std::uint64_t min,
                                               std::uint64_t max) const;
  /// Like unsigned_integer, but NULL (no row in a subquery) reads as 0.
  [[nodiscard]] std::uint64_t unsigned_or_zero(int column, const char* what,
                                               std::uint64_t max) const;
  [[nodiscard]] std::string text(int column, const char* what) const;
  [[nodiscard]] bytes blob(int column, const char* what) const;

 private:
  connection& owner_;
  sqlite3_stmt* stmt_;
};

/// One SQLite connection.
class connection {
 public:
  /// Opens `file` read-write (creating it) or read-only.
  connection(const std::filesystem::path& file, bool read_only,
             std::chrono::milliseconds busy_timeout);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Runs SQL that returns no rows (several statements allowed).
  void exec(const char* sql);
  /// The cached prepared statement for `sql` (a string literal: cached by address).
  statement prepare(const char* sql);
  /// True when no transaction is open (SQLite rolled back, or none was begun).
  [[nodiscard]] bool autocommit() const noexcept;
  /// The rowid of the last row inserted on this connection.
  [[nodiscard]] std::int64_t last_insert_rowid() const noexcept;

  /// Throws errc::store_failure with SQLite's message unless `rc` is `ok`.
  void check(int rc, const char* what) const;
  [[noreturn]] void fail(const char* what) const;

  [[nodiscard]] sqlite3* handle() const noexcept { return db_; }

 private:
  sqlite3* db_ = nullptr;
  std::filesystem::path file_;
  std::unordered_map<const char*, sqlite3_stmt*> cache_;
};

}  // namespace troupe::persistence::sqlite
