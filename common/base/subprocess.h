// Child processes with their own process group, a wall-clock limit, a kill of the whole group
// and bounded capture of their output. The worker's sandbox and the engine's host compiler
// build on this.
//
// Thread-safety: a Subprocess object is used by one thread. Different objects are independent.
// Ownership: a running Subprocess owns its pipes; destroying it kills the group and reaps the
// child, so no process outlives its owner.
#ifndef KFORGE_COMMON_BASE_SUBPROCESS_H_
#define KFORGE_COMMON_BASE_SUBPROCESS_H_

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace kforge {

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH if it has no '/'
  // Environment of the child: the parent's when `env` is empty and inherit_env is true.
  std::vector<std::string> env;   // "NAME=value" entries added to (or replacing) the base
  bool inherit_env = true;
  std::string cwd;                // empty: the parent's
  std::string stdin_data;         // written to the child's stdin, then closed
  double wall_limit_s = 0;        // 0: none. Past it, the whole group gets SIGKILL
  size_t max_output_bytes = 1 << 20;  // per stream; the rest is read and dropped
  // Runs in the child after fork, before exec. It must only make async-signal-safe calls
  // (setrlimit, prctl, seccomp_load of a prepared filter...). Returning false aborts the
  // exec and the child exits with code 126.
  std::function<bool()> child_setup;
};

struct SubprocessResult {
  bool started = false;      // false: fork/exec failed, see `error`
  std::string error;         // why it could not start
  int exit_code = -1;        // when it exited normally
  int term_signal = 0;       // when a signal ended it
  bool timed_out = false;    // the wall-clock limit was hit and the group killed
  std::string stdout_data;
  std::string stderr_data;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  double wall_s = 0;

  bool Succeeded() const { return started && !timed_out && term_signal == 0 && exit_code == 0; }
  // "exit code 3", "killed by signal 9 (Killed)", "timed out after 2.0 s"...
  std::string Describe() const;
};

class Subprocess {
 public:
  Subprocess() = default;
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Forks and execs. On failure returns false and fills result().error.
  bool Start(SpawnOptions options);
  pid_t pid() const { return pid_; }
  // Sends `sig` to every process of the child's group.
  void SignalGroup(int sig);
  // Pumps output until the child exits or the wall limit passes (then kills the group),
  // kills whatever is left of the group, and returns the result.
  const SubprocessResult& Wait();
  const SubprocessResult& result() const { return result_; }

 private:
  SpawnOptions options_;
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  int in_fd_ = -1;
  bool reaped_ = false;
  SubprocessResult result_;
};

// Start + Wait in one call.
SubprocessResult RunSubprocess(SpawnOptions options);

}  // namespace kforge

#endif  // KFORGE_COMMON_BASE_SUBPROCESS_H_
