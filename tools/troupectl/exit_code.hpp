#pragma once
/// troupectl's exit codes and the exception that carries one up to run(): a command fails by
/// throwing, and run() prints the message and returns the code.

#include <stdexcept>
#include <string>

namespace troupectl {

enum exit_code : int {
  ok = 0,
  other_failure = 1,
  usage = 2,         // a bad command line (CLI11's errors too)
  unreachable = 3,   // the node did not answer: refused, reset, or past --timeout
  refused = 4,       // the token was refused (401 or 403)
  not_found = 5,     // 404: unknown type, id or endpoint
  server_error = 6,  // 5xx: the node failed or cannot do it now
};

/// A failure with the exit code it ends troupectl with.
class failure : public std::runtime_error {
 public:
  failure(exit_code code, const std::string& message) : std::runtime_error(message), code_(code) {}
  [[nodiscard]] exit_code code() const noexcept { return code_; }

 private:
  exit_code code_;
};

/// The exit codes as `--help` and the docs list them.
inline constexpr const char* exit_codes_help =
    "Exit codes:\n"
    "  0  ok\n"
    "  1  other failure (leave: the node at --url is not <node>, or --wait passed)\n"
    "  2  usage error\n"
    "  3  node unreachable or no answer within --timeout\n"
    "  4  token refused (401/403)\n"
    "  5  not found (404: unknown type, id or endpoint)\n"
    "  6  server error (5xx; its message is printed)\n";

}  // namespace troupectl
