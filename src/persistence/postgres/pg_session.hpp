#pragma once
// One PostgreSQL connection of the plugin, owned by one thread. It connects lazily, sets the
// search path to the plugin's schema, prepares the statements, and after the server dropped the
// connection it connects again on the next use.

#include <troupe/persistence/errc.hpp>

#include <pqxx/connection>

#include <memory>
#include <string>

namespace troupe::persistence::pg {

/// Where and how to connect.
struct session_settings {
  std::string url;
  std::string schema;
  std::string application_name;
  /// Creates the schema and its tables (when missing) on connecting: the writer does.
  bool create_schema = false;
};

/// A libpq URL or connection string without its password, for messages.
std::string redact(const std::string& url);

/// A SQL identifier, double-quoted.
std::string quote_identifier(const std::string& name);

/// A lazily (re)opened connection with the plugin's prepared statements.
class session {
 public:
  explicit session(session_settings s) : settings_(std::move(s)) {}

  /// The open connection; connects first when there is none. Throws
  /// persistence_error(errc::store_failure) when the server cannot be reached.
  pqxx::connection& get();

  /// Forgets the connection (after the server dropped it); the next get() connects again.
  void reset() noexcept { connection_.reset(); }

  [[nodiscard]] const session_settings& settings() const noexcept { return settings_; }

 private:
  session_settings settings_;
  std::unique_ptr<pqxx::connection> connection_;
};

/// Whether an exception (from a libpqxx call) means the connection is gone.
bool connection_lost(const std::exception_ptr& e) noexcept;

}  // namespace troupe::persistence::pg
