#include "persistence/sqlite/sqlite_connection.hpp"

#include <sqlite3.h>

#include <limits>
#include <string>

namespace troupe::persistence::sqlite {

namespace {

[[noreturn]] void corrupt(const char* what, const char* why) {
  throw persistence_error(errc::corrupt_record,
                          std::string("corrupt stored record: ") + what + " " + why);
}

}  // namespace

// -- statement ---------------------------------------------------------------

statement::~statement() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

statement& statement::bind(int index, std::int64_t value) {
  owner_.check(sqlite3_bind_int64(stmt_, index, value), "bind");
  return *this;
}

statement& statement::bind_unsigned(int index, std::uint64_t value) {
  if (value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    throw persistence_error(errc::invalid_request,
                            "number " + std::to_string(value) + " is too large for SQLite");
  }
  return bind(index, static_cast<std::int64_t>(value));
}

statement& statement::bind(int index, std::string_view text) {
  owner_.check(
      sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
      "bind");
  return *this;
}

statement& statement::bind(int index, std::span<const std::byte> blob) {
  // A null pointer would store NULL; an empty payload must stay an (empty) blob.
  if (blob.empty()) {
    owner_.check(sqlite3_bind_zeroblob(stmt_, index, 0), "bind");
  } else {
    owner_.check(sqlite3_bind_blob64(stmt_, index, blob.data(), blob.size(), SQLITE_TRANSIENT),
                 "bind");
  }
  return *this;
}

bool statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  owner_.fail("step");
}

void statement::run() {
  while (step()) {
  }
}

std::int64_t statement::integer(int column, const char* what) const {
  if (sqlite3_column_type(stmt_, column) != SQLITE_INTEGER) corrupt(what, "is not an integer");
  return sqlite3_column_int64(stmt_, column);
}

std::uint64_t statement::unsigned_integer(int column, const char* what, std::uint64_t min,
                                          std::uint64_t max) const {
  auto v = integer(column, what);
  if (v < 0 || static_cast<std::uint64_t>(v) < min || static_cast<std::uint64_t>(v) > max) {
    corrupt(what, ("is out of range: " + std::to_string(v)).c_str());
  }
  return static_cast<std::uint64_t>(v);
}

std::uint64_t statement::unsigned_or_zero(int column, const char* what, std::uint64_t max) const {
  if (sqlite3_column_type(stmt_, column) == SQLITE_NULL) return 0;
  return unsigned_integer(column, what, 0, max);
}

std::string statement::text(int column, const char* what) const {
  if (sqlite3_column_type(stmt_, column) != SQLITE_TEXT) corrupt(what, "is not text");
  const auto* p = sqlite3_column_text(stmt_, column);
  auto n = static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column));
  return {reinterpret_cast<const char*>(p), n};
}

bytes statement::blob(int column, const char* what) const {
  if (sqlite3_column_type(stmt_, column) != SQLITE_BLOB) corrupt(what, "is not a blob");
  const auto* p = static_cast<const std::byte*>(sqlite3_column_blob(stmt_, column));
  auto n = static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column));
  if (n == 0) return {};
  return {p, p + n};
}

// -- connection --------------------------------------------------------------

connection::connection(const std::filesystem::path& file, bool read_only,
                       std::chrono::milliseconds busy_timeout)
    : file_(file) {
  // NOMUTEX: each connection is used by one thread only, so SQLite's own locking is not needed.
  int flags = SQLITE_OPEN_NOMUTEX |
              (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  int rc = sqlite3_open_v2(file.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string why = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw persistence_error(errc::store_failure,
                            "cannot open SQLite database " + file.string() + ": " + why);
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, static_cast<int>(busy_timeout.count()));
}

connection::~connection() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  sqlite3_close(db_);
}

void connection::exec(const char* sql) {
  char* message = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    std::string why = message != nullptr ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    throw persistence_error(errc::store_failure,
                            "SQLite (" + file_.string() + "): " + why + " in: " + sql);
  }
}

statement connection::prepare(const char* sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    check(sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr), "prepare");
    it = cache_.emplace(sql, stmt).first;
  }
  return {*this, it->second};
}

bool connection::autocommit() const noexcept { return sqlite3_get_autocommit(db_) != 0; }

std::int64_t connection::last_insert_rowid() const noexcept {
  return sqlite3_last_insert_rowid(db_);
}

void connection::check(int rc, const char* what) const {
  if (rc != SQLITE_OK) fail(what);
}

void connection::fail(const char* what) const {
  throw persistence_error(errc::store_failure, std::string("SQLite ") + what + " failed (" +
                                                   file_.string() + "): " + sqlite3_errmsg(db_));
}

}  // namespace troupe::persistence::sqlite
