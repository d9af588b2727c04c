// The command line: global options, one subcommand each, and the mapping of every failure to
// an exit code. CLI11's own errors are usage errors (2); --help is a success (0).
#include "troupectl/run.hpp"

#include "troupectl/commands.hpp"
#include "troupectl/exit_code.hpp"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <iostream>
#include <stdexcept>

namespace troupectl {

namespace {

std::atomic<bool> interrupted{false};

extern "C" void on_interrupt(int /*signal*/) { interrupted.store(true); }

/// Installs the Ctrl-C handler for as long as it lives, then puts the previous one back.
class interrupt_guard {
 public:
  interrupt_guard() : previous_(std::signal(SIGINT, on_interrupt)) { interrupted.store(false); }
  ~interrupt_guard() { std::signal(SIGINT, previous_); }
  interrupt_guard(const interrupt_guard&) = delete;
  interrupt_guard& operator=(const interrupt_guard&) = delete;

 private:
  void (*previous_)(int);
};

std::chrono::milliseconds duration_option(const std::string& name, const std::string& text) {
  try {
    return parse_duration(text);
  } catch (const std::invalid_argument&) {
    throw failure(usage, name + ": '" + text + "' is not a duration (try 500ms, 5s or 2m)");
  }
}

}  // namespace

std::chrono::milliseconds parse_duration(const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument("not a duration: " + text);
  }
  const std::string unit = text.substr(used);
  double ms = 0;
  if (unit == "ms") {
    ms = value;
  } else if (unit.empty() || unit == "s") {
    ms = value * 1000;
  } else if (unit == "m") {
    ms = value * 60'000;
  } else {
    throw std::invalid_argument("not a duration: " + text);
  }
  if (!(ms >= 0) || ms > 24.0 * 3600 * 1000) throw std::invalid_argument("out of range: " + text);
  return std::chrono::milliseconds(static_cast<std::int64_t>(ms));
}

int run(int argc, char** argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"troupectl: inspect and operate a Troupe cluster through a node's management API",
               "troupectl"};
  app.footer(exit_codes_help);
  app.require_subcommand(1);
  // Global options may also follow the command: `troupectl members --json`.
  app.fallthrough();

  std::string url = "http://127.0.0.1:8558";
  std::string token;
  std::string timeout = "5s";
  bool json = false;
  app.add_option("--url", url, "The node's management API")->capture_default_str();
  app.add_option("--token", token, "Bearer token for leave and rebalance")
      ->envname("TROUPECTL_TOKEN");
  app.add_flag("--json", json, "Print JSON (the server's, or one object the command builds)");
  app.add_option("--timeout", timeout, "Deadline of each request (500ms, 5s, 1m)")
      ->capture_default_str();

  std::string type;
  std::string id;
  std::string node;
  auto* members_cmd = app.add_subcommand("members", "List the cluster's members");
  auto* shards_cmd = app.add_subcommand("shards", "List a type's shards: owner, epoch, load");
  shards_cmd->add_option("type", type, "Entity type")->required();
  auto* where_cmd = app.add_subcommand("where", "Show which shard and node an entity lives on");
  where_cmd->add_option("type", type, "Entity type")->required();
  where_cmd->add_option("id", id, "Entity id (any text; it is percent-encoded)")->required();
  auto* rebalance_cmd = app.add_subcommand("rebalance", "Ask for a rebalance of a type (token)");
  rebalance_cmd->add_option("type", type, "Entity type")->required();

  leave_options leave_opts;
  std::string wait = "60s";
  auto* leave_cmd = app.add_subcommand(
      "leave", "Make the node at --url leave gracefully (token), and follow its shards moving");
  leave_cmd->add_option("node", leave_opts.node, "The node at --url, named again as a check")
      ->required();
  leave_cmd->add_option("--type", leave_opts.types, "A type whose shards the progress bar counts")
      ->allow_extra_args(false)
      ->delimiter(',');
  leave_cmd->add_option("--wait", wait, "How long to follow the leave")->capture_default_str();
  std::string poll = "500ms";
  leave_cmd->add_option("--interval", poll, "Time between progress reads")->capture_default_str();

  top_options top_opts;
  std::string interval = "2s";
  auto* top_cmd = app.add_subcommand("top", "A live table of a type's busiest shards");
  top_cmd->add_option("type", top_opts.type, "Entity type")->required();
  top_cmd->add_option("--interval", interval, "Time between rounds")->capture_default_str();
  top_cmd->add_option("--iterations", top_opts.iterations, "Rounds to show (0: until Ctrl-C)")
      ->capture_default_str();
  top_cmd->add_option("--limit", top_opts.limit, "Shards per round")->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err) == 0 ? ok : usage;
  }

  try {
    const client api(url, duration_option("--timeout", timeout), token);
    const context c{api, json, out, err};
    if (members_cmd->parsed()) {
      members(c);
    } else if (shards_cmd->parsed()) {
      shards(c, type);
    } else if (where_cmd->parsed()) {
      where(c, type, id);
    } else if (rebalance_cmd->parsed()) {
      rebalance(c, type);
    } else if (leave_cmd->parsed()) {
      leave_opts.wait = duration_option("--wait", wait);
      leave_opts.poll = duration_option("--interval", poll);
      leave(c, leave_opts);
    } else if (top_cmd->parsed()) {
      top_opts.interval = duration_option("--interval", interval);
      top_opts.clear_screen = !json && &out == &std::cout && isatty(STDOUT_FILENO) == 1;
      const interrupt_guard guard;
      top_opts.stop = &interrupted;
      top(c, top_opts);
    }
    return ok;
  } catch (const failure& f) {
    err << "troupectl: " << f.what() << '\n';
    return f.code();
  } catch (const std::exception& e) {
    err << "troupectl: " << e.what() << '\n';
    return other_failure;
  }
}

}  // namespace troupectl
