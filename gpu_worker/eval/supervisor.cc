#include "gpu_worker/eval/supervisor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "common/base/utf8.h"
#include "gpu_worker/eval/process_tree.h"

namespace kforge::eval {
namespace {

bool outlived_kill = false;  // ProcessesOutlivedTheirKill

// How long KillStrays keeps at it: 30 s, or KFORGE_STRAYS_WAIT_S (tests).
double StraysWaitS() {
  const char* v = std::getenv("KFORGE_STRAYS_WAIT_S");
  const double s = v ? std::atof(v) : 0;
  return s > 0 ? s : 30;
}

// Descendants of the evaluation that left its process group (setpgid: ninja starts every
// compiler in a group of its own) outlive the group's SIGKILL; as their parents die they are
// reparented to this process, a child subreaper, and killed here until none is left. So is the
// candidate process, which the evaluation process kills without waiting for it: its CUDA
// context may take a while to be torn down, and the next evaluation starts only once it is
// gone. False when some are left after StraysWaitS() (a process stuck in the driver, or a
// chain of forks: ProcessesOutlivedTheirKill).
bool KillStrays(pid_t spare) {
  const double wait_s = StraysWaitS();
  if (KillChildren(wait_s, spare)) return true;
  std::fprintf(stderr,
               "kforge: processes of the last evaluation outlived their SIGKILL by %.0f s\n",
               wait_s);
  outlived_kill = true;
  return false;
}

using Clock = std::chrono::steady_clock;

void WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

double LimitFor(const SupervisorLimits& l, Stage s) {
  switch (s) {
    case Stage::kLoad:
      return l.load_s;
    case Stage::kBuild:
      return l.build_s;
    case Stage::kCorrectness:
      return l.correctness_s;
    case Stage::kTiming:
      return l.timing_s;
    case Stage::kGpuWait:
      return 0;  // RunSupervised's GpuTurns::wait_s
  }
  return l.load_s;
}

}  // namespace

const char* StageName(Stage s) {
  switch (s) {
    case Stage::kLoad:
      return "load";
    case Stage::kBuild:
      return "build";
    case Stage::kCorrectness:
      return "correctness";
    case Stage::kTiming:
      return "timing";
    case Stage::kGpuWait:
      return "gpu_wait";
  }
  return "load";
}

void StageReporter::Enter(Stage stage) {
  char c = static_cast<char>(stage);
  WriteAll(fd_, &c, 1);
}

bool StageReporter::AwaitGpuTurn(std::string* error) {
  if (turn_fd_ < 0) return true;
  Enter(Stage::kGpuWait);
  char c;
  ssize_t n;
  do {
    n = read(turn_fd_, &c, 1);
  } while (n < 0 && errno == EINTR);
  if (n == 1) return true;
  *error = "the supervisor did not grant the GPU's turn";
  return false;
}

void StageReporter::Deliver(const v1::EvalResult& result) {
  std::string bytes = result.SerializeAsString();
  char tag = 'R';
  uint32_t n = static_cast<uint32_t>(bytes.size());
  WriteAll(fd_, &tag, 1);
  WriteAll(fd_, &n, sizeof n);
  WriteAll(fd_, bytes.data(), bytes.size());
}

SupervisorLimits LimitsFor(const v1::EvalRequest& request) {
  SupervisorLimits limits;
  const v1::StageLimits& l = request.limits();
  if (l.build_s() > 0) limits.build_s = l.build_s();
  if (l.correctness_s() > 0) limits.correctness_s = l.correctness_s();
  if (l.timing_s() > 0) limits.timing_s = l.timing_s();
  return limits;
}

void BecomeEvaluationProcess(int out) {
  prctl(PR_SET_DUMPABLE, 1);
  setpgid(0, 0);
  dup2(out, 1);
  dup2(out, 2);
  close(out);
}

void RunEvaluationAndExit(int ctl, int turn, const EvaluationWork& work) {
  StageReporter reporter(ctl, turn);
  v1::EvalResult r = work(reporter);
  // Everything printed goes first: the supervisor ends the process once the result is in.
  fflush(stdout);
  fflush(stderr);
  reporter.Deliver(r);
  _exit(0);
}

v1::EvalResult RunSupervised(const SupervisorLimits& limits, const EvaluationWork& work,
                             const ForkHooks& hooks, const GpuTurns& turns) {
  const int gpu_lock_fd = turns.lock_fd;
  auto limit_for = [&](Stage s) {
    return s == Stage::kGpuWait ? turns.wait_s : LimitFor(limits, s);
  };
  int ctl[2] = {-1, -1}, out[2] = {-1, -1}, turn[2] = {-1, -1};
  auto close_all = [&] {
    for (int* p : {ctl, out, turn}) {
      for (int i : {0, 1}) {
        if (p[i] >= 0) close(p[i]);
        p[i] = -1;
      }
    }
  };
  if (pipe2(ctl, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 ||
      (gpu_lock_fd >= 0 && pipe2(turn, O_CLOEXEC) != 0)) {
    close_all();
    v1::EvalResult r;
    r.set_verdict(v1::VERDICT_RUNTIME_ERROR);
    r.set_reason(std::string("engine could not create pipes: ") + strerror(errno));
    return r;
  }
  fflush(stdout);
  fflush(stderr);
  if (hooks.before && !hooks.spawn) hooks.before();
  // Not dumpable: an evaluation process of the same uid cannot open /proc/<supervisor>/fd/*
  // (the result channel) to forge an answer. The evaluation process itself is dumpable again.
  prctl(PR_SET_DUMPABLE, 0);
  // Orphans of the evaluation come here (KillStrays); so does a spawned evaluation process,
  // which its spawner's short-lived child orphans (serve.cc).
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  pid_t pid = hooks.spawn ? hooks.spawn(ctl[1], out[1], turn[0]) : fork();
  if (pid == 0 && !hooks.spawn) {
    close(ctl[0]);
    close(out[0]);
    if (gpu_lock_fd >= 0) {
      // Sharing the lock's open file description, code here could release the supervisor's
      // flock (LOCK_UN) or hold it past the evaluation.
      close(gpu_lock_fd);
      close(turn[1]);
    }
    BecomeEvaluationProcess(out[1]);  // dumpable again only once those are closed
    if (hooks.child) hooks.child();
    RunEvaluationAndExit(ctl[1], turn[0], work);
  }
  if (hooks.parent && !hooks.spawn) hooks.parent();
  for (int* end : {&ctl[1], &out[1], &turn[0]}) {  // the child's ends
    if (*end >= 0) close(*end);
    *end = -1;
  }
  v1::EvalResult result;
  if (pid < 0) {
    close_all();
    result.set_verdict(v1::VERDICT_RUNTIME_ERROR);
    result.set_reason(std::string("engine could not fork: ") + strerror(errno));
    return result;
  }
  setpgid(pid, pid);

  Stage stage = Stage::kLoad;
  auto stage_start = Clock::now();
  const auto forked_at = stage_start;
  std::vector<std::pair<Stage, Clock::time_point>> entered = {{stage, stage_start}};
  std::string ctl_buf, output;
  bool output_truncated = false, got_result = false, timed_out = false, flooded = false;
  bool turn_held = false;
  Clock::time_point turn_granted;
  double timed_out_limit_s = 0;
  size_t output_total = 0;
  bool ctl_open = true, out_open = true, exited = false;
  int status = 0;
  Clock::time_point exited_at;
  // When the evaluation ended: its answer, its exit, or the kill for a limit or a flood.
  std::optional<Clock::time_point> ended_at;
  auto ended = [&] {
    if (!ended_at) ended_at = Clock::now();
  };
  while (ctl_open || out_open || !exited) {
    if (!exited && waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      exited_at = Clock::now();
      ended();
      kill(-pid, SIGKILL);  // leftovers of the group (forked children) go too
    }
    if (exited && std::chrono::duration<double>(Clock::now() - exited_at).count() > 2) break;
    // Once the turn is given, the evaluation leaves the wait at once (its next stage's limit
    // applies from there); one that stays in it, or enters it again, has the load stage's
    // limit counted from the grant: the wait's own limit no longer holds.
    const bool after_grant = stage == Stage::kGpuWait && turn_held;
    const double elapsed =
        std::chrono::duration<double>(Clock::now() - (after_grant ? turn_granted : stage_start))
            .count();
    const double limit = after_grant ? LimitFor(limits, Stage::kLoad) : limit_for(stage);
    if (!exited && !timed_out && !got_result && elapsed > limit) {
      timed_out = true;
      timed_out_limit_s = limit;
      ended();
      kill(-pid, SIGKILL);
    }
    const bool waiting = stage == Stage::kGpuWait && !turn_held && turn[1] >= 0 && !exited &&
                         !timed_out && !got_result;
    if (waiting && flock(gpu_lock_fd, LOCK_EX | LOCK_NB) == 0) {
      turn_held = true;
      turn_granted = Clock::now();
      char go = 'g';
      WriteAll(turn[1], &go, 1);
    }
    struct pollfd fds[2];
    int nfds = 0;
    if (ctl_open) fds[nfds++] = {ctl[0], POLLIN, 0};
    if (out_open) fds[nfds++] = {out[0], POLLIN, 0};
    if (nfds == 0) {
      usleep(2000);
      continue;
    }
    if (poll(fds, nfds, waiting ? 1 : 20) <= 0) continue;
    for (int i = 0; i < nfds; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
          (fds[i].fd == ctl[0] ? ctl_open : out_open) = false;
        }
        continue;
      }
      if (fds[i].fd == out[0]) {
        output_total += static_cast<size_t>(n);
        if (!flooded && !exited && !got_result && output_total > limits.output_flood_bytes) {
          flooded = true;
          ended();
          kill(-pid, SIGKILL);
        }
        size_t room = output.size() < limits.max_output_bytes
                          ? limits.max_output_bytes - output.size()
                          : 0;
        output.append(buf, std::min(room, static_cast<size_t>(n)));
        if (static_cast<size_t>(n) > room) output_truncated = true;
        continue;
      }
      ctl_buf.append(buf, static_cast<size_t>(n));
      // Stage bytes until an 'R', then a length-prefixed result.
      while (!ctl_buf.empty() && ctl_buf[0] != 'R') {
        stage = static_cast<Stage>(ctl_buf[0]);
        stage_start = Clock::now();
        entered.emplace_back(stage, stage_start);
        ctl_buf.erase(0, 1);
      }
      if (!got_result && ctl_buf.size() >= 5 && ctl_buf[0] == 'R') {
        uint32_t len;
        std::memcpy(&len, ctl_buf.data() + 1, sizeof len);
        if (ctl_buf.size() >= 5 + static_cast<size_t>(len)) {
          got_result = result.ParseFromArray(ctl_buf.data() + 5, static_cast<int>(len));
          // The evaluation is over (the evaluation process killed its candidate process
          // without waiting for it, and was about to leave): the group goes at once, and
          // their CUDA contexts are torn down together, after the answer. Everything they
          // printed before the result is in the pipe.
          if (got_result) ended();
          if (got_result && !exited) kill(-pid, SIGKILL);
        }
      }
    }
  }
  close(ctl[0]);
  close(out[0]);
  ended();
  if (!exited) {
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  const bool all_gone = KillStrays(hooks.spare);
  // Every process of the evaluation is gone, CUDA contexts included: the next may have the GPU.
  // Otherwise the turn stays held until this process ends (ProcessesOutlivedTheirKill).
  double turn_s = 0, release_s = 0;
  if (turn_held) {
    if (all_gone) flock(gpu_lock_fd, LOCK_UN);
    const auto released = Clock::now();
    turn_s = std::chrono::duration<double>(released - turn_granted).count();
    release_s = std::chrono::duration<double>(released - std::max(turn_granted, *ended_at)).count();
  }
  if (turn[1] >= 0) close(turn[1]);
  if (output_truncated) output += "\n[output truncated]";
  output = PrintableUtf8(output);  // a string field: what a candidate printed may be any bytes
  // A result the supervisor decides below replaces the child's; keep the stage durations it
  // saw from the stage reports (load counts from the fork, so it includes the start-up).
  v1::StageDurations seen;
  auto end = Clock::now();
  for (size_t i = 0; i < entered.size(); ++i) {
    auto until = i + 1 < entered.size() ? entered[i + 1].second : end;
    double d = std::chrono::duration<double>(until - entered[i].second).count();
    switch (entered[i].first) {
      case Stage::kLoad:
        seen.set_load_task_s(seen.load_task_s() + d);
        break;
      case Stage::kBuild:
        seen.set_build_s(seen.build_s() + d);
        break;
      case Stage::kCorrectness:
        seen.set_correctness_s(seen.correctness_s() + d);
        break;
      case Stage::kTiming:
        seen.set_timing_s(seen.timing_s() + d);
        break;
      case Stage::kGpuWait:
        seen.set_gpu_wait_s(seen.gpu_wait_s() + d);
        break;
    }
  }
  seen.set_total_s(std::chrono::duration<double>(end - forked_at).count());
  // The supervisor's own verdict replaces whatever the evaluation answered.
  auto decide = [&](v1::Verdict verdict, const char* rule, const std::string& reason) {
    result.Clear();
    result.set_verdict(verdict);
    result.set_rule(rule);
    result.set_reason(reason);
    result.set_stage(StageName(stage));
    *result.mutable_stages() = seen;
  };
  char buf[240];
  if (!all_gone) {
    // Its processes outlived it, and may still be running.
    std::snprintf(buf, sizeof buf,
                  "outlived_kill: processes of the evaluation were still alive %.0f s after "
                  "their SIGKILL (a chain of forks, or a process stuck in the driver); the "
                  "evaluation server stops, and its sandbox ends them",
                  StraysWaitS());
    decide(v1::VERDICT_RUNTIME_ERROR, "outlived_kill", buf);
  } else if (flooded) {
    decide(v1::VERDICT_RUNTIME_ERROR, "output_flood",
           "output_flood: the candidate printed more than " +
               std::to_string(limits.output_flood_bytes >> 20) + " MiB during stage " +
               StageName(stage) + "; the process was killed");
  } else if (timed_out && stage == Stage::kGpuWait && !turn_held) {
    // Not the candidate's doing: none of its code has run yet.
    std::snprintf(buf, sizeof buf,
                  "waited %.0f s for the GPU's turn, which other evaluations of the GPU held; "
                  "nothing of the candidate ran",
                  limit_for(stage));
    decide(v1::VERDICT_RUNTIME_ERROR, "gpu_turn_timeout", buf);
  } else if (timed_out) {
    std::snprintf(buf, sizeof buf, "stage %s exceeded its %.0f s limit; the process was killed",
                  StageName(stage), timed_out_limit_s);
    decide(v1::VERDICT_TIMEOUT, "", buf);
  } else if (!got_result) {
    std::string how;
    if (WIFSIGNALED(status)) {
      how = "died with signal " + std::to_string(WTERMSIG(status)) + " (" +
            strsignal(WTERMSIG(status)) + ")";
    } else {
      how = "exited with code " + std::to_string(WEXITSTATUS(status));
    }
    decide(v1::VERDICT_RUNTIME_ERROR, "",
           "the evaluation process " + how + " during stage " + StageName(stage) +
               " without a result");
  }
  result.set_output_log(output);
  if (turn_held) {
    result.mutable_stages()->set_gpu_turn_s(turn_s);
    result.mutable_stages()->set_gpu_release_s(release_s);
  }
  return result;
}

bool ProcessesOutlivedTheirKill() { return outlived_kill; }

}  // namespace kforge::eval
