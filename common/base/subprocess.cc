#include "common/base/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>

extern char** environ;

namespace kforge {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Reads what is available on fd into out (up to cap), dropping the rest. Returns false on EOF.
bool Drain(int fd, std::string& out, bool& truncated, size_t cap) {
  char buf[16384];
  ssize_t n = read(fd, buf, sizeof buf);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  size_t room = out.size() < cap ? cap - out.size() : 0;
  size_t keep = std::min(room, static_cast<size_t>(n));
  out.append(buf, keep);
  if (keep < static_cast<size_t>(n)) truncated = true;
  return true;
}

std::vector<std::string> BuildEnv(const SpawnOptions& o) {
  std::map<std::string, std::string> vars;
  if (o.inherit_env) {
    for (char** e = environ; *e; ++e) {
      std::string s(*e);
      auto eq = s.find('=');
      if (eq != std::string::npos) vars[s.substr(0, eq)] = s;
    }
  }
  for (const auto& s : o.env) {
    auto eq = s.find('=');
    if (eq != std::string::npos) vars[s.substr(0, eq)] = s;
  }
  std::vector<std::string> out;
  for (auto& [k, v] : vars) out.push_back(v);
  return out;
}

}  // namespace

std::string SubprocessResult::Describe() const {
  if (!started) return "could not start: " + error;
  char buf[128];
  if (timed_out) {
    std::snprintf(buf, sizeof buf, "timed out after %.1f s", wall_s);
  } else if (term_signal != 0) {
    std::snprintf(buf, sizeof buf, "killed by signal %d (%s)", term_signal,
                  strsignal(term_signal));
  } else {
    std::snprintf(buf, sizeof buf, "exit code %d", exit_code);
  }
  return buf;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !reaped_) {
    SignalGroup(SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
  }
  for (int fd : {out_fd_, err_fd_, in_fd_}) {
    if (fd >= 0) close(fd);
  }
}

bool Subprocess::Start(SpawnOptions options) {
  options_ = std::move(options);
  if (options_.argv.empty()) {
    result_.error = "empty argv";
    return false;
  }
  int out[2], err[2], in[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 || pipe2(in, O_CLOEXEC) != 0) {
    result_.error = std::string("pipe: ") + strerror(errno);
    return false;
  }
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::vector<std::string> env_strings = BuildEnv(options_);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (auto& s : options_.argv) argv.push_back(s.data());
  argv.push_back(nullptr);
  int status_pipe[2];  // reports an exec failure's errno to the parent
  if (pipe2(status_pipe, O_CLOEXEC) != 0) {
    result_.error = std::string("pipe: ") + strerror(errno);
    return false;
  }

  pid_t pid = fork();
  if (pid < 0) {
    result_.error = std::string("fork: ") + strerror(errno);
    return false;
  }
  if (pid == 0) {
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    if (!options_.cwd.empty() && chdir(options_.cwd.c_str()) != 0) {
      int e = errno;
      (void)!write(status_pipe[1], &e, sizeof e);
      _exit(127);
    }
    if (options_.child_setup && !options_.child_setup()) _exit(126);
    const char* file = argv[0];
    if (std::strchr(file, '/')) {
      execve(file, argv.data(), envp.data());
    } else {
      environ = envp.data();
      execvp(file, argv.data());
    }
    int e = errno;
    (void)!write(status_pipe[1], &e, sizeof e);
    _exit(127);
  }
  pid_ = pid;
  setpgid(pid, pid);  // also from the parent, so the group exists before we signal it
  close(status_pipe[1]);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
  in_fd_ = in[1];
  int child_errno = 0;
  ssize_t n = read(status_pipe[0], &child_errno, sizeof child_errno);
  close(status_pipe[0]);
  if (n == sizeof child_errno) {
    result_.error = options_.argv[0] + ": " + strerror(child_errno);
    int st;
    waitpid(pid_, &st, 0);
    reaped_ = true;
    return false;
  }
  result_.started = true;
  if (!options_.stdin_data.empty()) {
    // Small inputs only (requests); a child that does not read its stdin must not block us.
    fcntl(in_fd_, F_SETFL, O_NONBLOCK);
    (void)!write(in_fd_, options_.stdin_data.data(), options_.stdin_data.size());
  }
  close(in_fd_);
  in_fd_ = -1;
  return true;
}

void Subprocess::SignalGroup(int sig) {
  if (pid_ > 0) kill(-pid_, sig);
}

const SubprocessResult& Subprocess::Wait() {
  if (!result_.started || reaped_) return result_;
  auto start = Clock::now();
  bool out_open = true, err_open = true, exited = false;
  int status = 0;
  Clock::time_point exited_at;
  while (!exited || out_open || err_open) {
    // A descendant that left the group may still hold the pipes: stop reading soon after.
    if (exited && SecondsSince(exited_at) > 2.0) break;
    if (!exited) {
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exited = true;
        exited_at = Clock::now();
        reaped_ = true;
        // Descendants that kept our pipes open must not keep us waiting.
        SignalGroup(SIGKILL);
      }
    }
    if (!exited && options_.wall_limit_s > 0 && SecondsSince(start) > options_.wall_limit_s) {
      result_.timed_out = true;
      SignalGroup(SIGKILL);
    }
    struct pollfd fds[2];
    int nfds = 0;
    if (out_open) fds[nfds++] = {out_fd_, POLLIN, 0};
    if (err_open) fds[nfds++] = {err_fd_, POLLIN, 0};
    if (nfds == 0) {
      if (!exited) {
        usleep(2000);
      }
      continue;
    }
    int ready = poll(fds, nfds, 20);
    if (ready <= 0) continue;
    for (int i = 0; i < nfds; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (fds[i].fd == out_fd_ &&
          !Drain(out_fd_, result_.stdout_data, result_.stdout_truncated,
                 options_.max_output_bytes)) {
        out_open = false;
      }
      if (fds[i].fd == err_fd_ &&
          !Drain(err_fd_, result_.stderr_data, result_.stderr_truncated,
                 options_.max_output_bytes)) {
        err_open = false;
      }
    }
  }
  result_.wall_s = SecondsSince(start);
  if (WIFEXITED(status)) result_.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result_.term_signal = WTERMSIG(status);
  return result_;
}

SubprocessResult RunSubprocess(SpawnOptions options) {
  Subprocess p;
  if (!p.Start(std::move(options))) return p.result();
  return p.Wait();
}

}  // namespace kforge
