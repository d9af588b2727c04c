#include "child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <utility>

extern char** environ;

namespace cluster_demo {

child_process::child_process(const std::vector<std::string>& args,
                             std::function<void(std::string)> on_log)
    : on_log_(std::move(on_log)) {
  int from_child[2];
  // Close-on-exec: a later child must not hold this one's pipe open.
  if (::pipe2(from_child, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<std::string> all{self};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int spawned = ::posix_spawn(&pid_, self.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(from_child[1]);
  if (spawned != 0) {
    ::close(from_child[0]);
    pid_ = -1;
    throw std::runtime_error("could not start " + self);
  }
  reader_ = std::thread([this, fd = from_child[0]] { read_output(fd); });
}

child_process::~child_process() {
  if (!status_) {
    signal(SIGKILL);
    wait_exit(std::chrono::seconds(10));
  }
  // Its output ends with it (or with its last child holding the pipe: none does).
  if (reader_.joinable()) reader_.join();
}

void child_process::signal(int signo) {
  if (pid_ > 0 && !status_) ::kill(pid_, signo);
}

void child_process::read_output(int fd) {
  FILE* in = ::fdopen(fd, "r");
  if (in == nullptr) {
    ::close(fd);
  } else {
    char buf[4096];
    while (std::fgets(buf, sizeof buf, in) != nullptr) {
      std::string line = buf;
      if (!line.empty() && line.back() == '\n') line.pop_back();
      if (line.rfind("log ", 0) == 0) {
        if (on_log_) on_log_(line.substr(4));
        continue;
      }
      std::lock_guard lock(mutex_);
      lines_.push_back(std::move(line));
      changed_.notify_all();
    }
    std::fclose(in);
  }
  std::lock_guard lock(mutex_);
  output_ended_ = true;
  changed_.notify_all();
}

std::optional<std::string> child_process::wait_line(const std::string& prefix,
                                                    std::chrono::milliseconds limit) {
  std::unique_lock lock(mutex_);
  std::optional<std::string> found;
  changed_.wait_for(lock, limit, [&] {
    for (const auto& l : lines_) {
      if (l.rfind(prefix, 0) == 0) {
        found = l.substr(prefix.size());
        return true;
      }
    }
    return output_ended_;
  });
  return found;
}

bool child_process::wait_exit(std::chrono::milliseconds limit) {
  if (status_) return true;
  if (pid_ <= 0) return true;
  const auto give_up = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      status_ = status;
      return true;
    }
    if (r < 0) {
      status_ = -1;  // not our child any more: nothing to reap
      return true;
    }
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::optional<std::string> child_process::how_it_ended() const {
  if (!status_) return std::nullopt;
  if (WIFEXITED(*status_)) return "exited with " + std::to_string(WEXITSTATUS(*status_));
  if (WIFSIGNALED(*status_)) return "killed by signal " + std::to_string(WTERMSIG(*status_));
  return "ended";
}

bool child_process::ended_cleanly(int signo) const {
  if (!status_) return false;
  return (WIFEXITED(*status_) && WEXITSTATUS(*status_) == 0) ||
         (WIFSIGNALED(*status_) && WTERMSIG(*status_) == signo);
}

}  // namespace cluster_demo
