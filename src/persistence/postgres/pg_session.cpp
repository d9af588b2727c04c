#include "persistence/postgres/pg_session.hpp"

#include "persistence/postgres/pg_operations.hpp"

#include <pqxx/except>
#include <pqxx/nontransaction>

#include <poll.h>

#include <mutex>
#include <regex>

namespace troupe::persistence::pg {

std::string redact(const std::string& url) {
  // URL form: scheme://user:password@host...; keyword form: password=...
  static const std::regex in_url(R"(^([a-zA-Z][a-zA-Z0-9+.-]*://[^:/@]*):[^@/]*@)");
  static const std::regex keyword(R"((password\s*=\s*)('([^'\\]|\\.)*'|\S+))");
  auto out = std::regex_replace(url, in_url, "$1:***@");
  return std::regex_replace(out, keyword, "$1***");
}

std::string quote_identifier(const std::string& name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

namespace {

/// Whether an idle connection has input waiting. Between operations the server sends nothing
/// unless it is closing the connection (a restart, pg_terminate_backend, an idle timeout) or
/// reporting a setting change; either way a new connection is the safe choice. Checking first
/// spares the operation a failed round trip (and libpqxx 6.4 leaks the result of a statement that
/// meets a closed connection).
bool input_waiting(const pqxx::connection& c) noexcept {
  pollfd p{c.sock(), POLLIN, 0};
  return p.fd < 0 || (::poll(&p, 1, 0) > 0 && p.revents != 0);
}

}  // namespace

pqxx::connection& session::get() {
  if (connection_ && connection_->is_open() && !input_waiting(*connection_)) return *connection_;
  connection_.reset();
  // libpqxx 6.4 writes process-wide state while a connection is set up (ThreadSanitizer saw two
  // plugins opening at once write and read the same bytes inside libpqxx): set up one at a
  // time. Opening is rare (start and reconnect), so the wait costs nothing on the write path.
  static std::mutex setup_mutex;
  const std::lock_guard setup_lock(setup_mutex);
  try {
    auto c = std::make_unique<pqxx::connection>(settings_.url);
    {
      pqxx::nontransaction t(*c);
      t.exec("SET application_name = " + t.quote(settings_.application_name));
      t.exec("SET search_path = " + quote_identifier(settings_.schema));
    }
    if (settings_.create_schema) create_schema(*c, settings_.schema);
    prepare_statements(*c);
    connection_ = std::move(c);
  } catch (const persistence_error&) {
    throw;
  } catch (const std::exception& e) {
    std::string why = e.what();
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    throw persistence_error(errc::store_failure,
                            "cannot connect to PostgreSQL (" + redact(settings_.url) + "): " + why);
  }
  return *connection_;
}

bool connection_lost(const std::exception_ptr& e) noexcept {
  try {
    std::rethrow_exception(e);
  } catch (const pqxx::broken_connection&) {
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace troupe::persistence::pg
