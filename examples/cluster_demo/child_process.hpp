#pragma once
// A node process of the driver: this program started again with other arguments. Its stdout is
// a pipe the driver reads line by line on a thread of its own: lines starting with "log " go to
// a handler (the node's runtime warnings), the others are kept for wait_line(). Its stderr is
// the driver's. Destroying it kills (SIGKILL) a process that has not ended, and reaps it.

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace cluster_demo {

class child_process {
 public:
  /// Starts /proc/self/exe with `args`; `on_log` gets each "log " line without its prefix.
  /// Throws std::runtime_error when it cannot start.
  child_process(const std::vector<std::string>& args, std::function<void(std::string)> on_log);
  ~child_process();
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }
  /// Sends `signo` unless the process was reaped.
  void signal(int signo);
  /// The rest of the first kept line that starts with `prefix`; nullopt when the output ended
  /// or `limit` passed first.
  std::optional<std::string> wait_line(const std::string& prefix, std::chrono::milliseconds limit);
  /// Waits at most `limit` for the process to end and reaps it; whether it has ended.
  bool wait_exit(std::chrono::milliseconds limit);
  /// Once reaped: how it ended ("exited with 0", "killed by signal 9").
  [[nodiscard]] std::optional<std::string> how_it_ended() const;
  /// Once reaped: it exited with 0, or ended by `signo`.
  [[nodiscard]] bool ended_cleanly(int signo) const;

 private:
  void read_output(int fd);

  pid_t pid_ = -1;
  std::optional<int> status_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> lines_;
  bool output_ended_ = false;
  std::function<void(std::string)> on_log_;
  std::thread reader_;
};

}  // namespace cluster_demo
