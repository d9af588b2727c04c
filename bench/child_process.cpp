#include "child_process.hpp"

#include "bench_support.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

extern char** environ;

namespace troupe::bench {

child_process::child_process(const std::vector<std::string>& args, const std::string& what) {
  int to_child[2];
  int from_child[2];
  // Close-on-exec: a later child must not hold this one's stdin open.
  if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0) {
    throw bench_failure("pipe failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<std::string> all{self};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int spawned = posix_spawn(&pid_, self.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(to_child[0]);
  ::close(from_child[1]);
  stdin_ = to_child[1];
  if (spawned != 0) {
    ::close(from_child[0]);
    ::close(stdin_);
    throw bench_failure("could not start " + what);
  }
  FILE* out = ::fdopen(from_child[0], "r");
  char line[256] = {};
  const bool printed = out != nullptr && std::fgets(line, sizeof line, out) != nullptr;
  if (out != nullptr) std::fclose(out);
  if (!printed) {
    ::close(stdin_);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    throw bench_failure(what + " did not start");
  }
  first_line_ = line;
  if (!first_line_.empty() && first_line_.back() == '\n') first_line_.pop_back();
}

child_process::~child_process() {
  ::close(stdin_);
  ::waitpid(pid_, nullptr, 0);
}

void child_process::kill_now() { ::kill(pid_, SIGKILL); }

void child_process::terminate() { ::kill(pid_, SIGTERM); }

}  // namespace troupe::bench
