#pragma once
// This benchmark program started again as a child process (a node of a multi-process case):
// its stdin is a pipe the parent holds, so closing it asks the child to stop, and the first
// line it prints says it is ready.

#include <sys/types.h>

#include <string>
#include <vector>

namespace troupe::bench {

class child_process {
 public:
  /// Starts /proc/self/exe with `args` and waits for its first line of output. Throws
  /// bench_failure (naming `what`) when it cannot start or ends before printing a line.
  child_process(const std::vector<std::string>& args, const std::string& what);
  /// Closes the child's stdin and waits for it to end.
  ~child_process();
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  /// The first line the child printed, without its newline.
  [[nodiscard]] const std::string& first_line() const noexcept { return first_line_; }
  /// kill -9.
  void kill_now();
  /// SIGTERM: a node leaves the cluster gracefully, then waits for its stdin to close.
  void terminate();

 private:
  pid_t pid_ = 0;
  int stdin_ = -1;
  std::string first_line_;
};

}  // namespace troupe::bench
