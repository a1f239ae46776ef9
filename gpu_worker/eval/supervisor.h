// Runs one evaluation in a forked child and turns whatever happens to it into a verdict.
//
// kforge-eval forks before it loads Python, torch or CUDA. The child evaluates and reports
// over a private pipe: the stage it enters (load, build, correctness, timing) and finally its
// EvalResult. The parent enforces each stage's time limit (killing the child's process group
// when one is exceeded: a hung kernel or an endless Python loop ends as TIMEOUT), captures the
// child's stdout and stderr with a bound (a flood costs nothing), and turns a child that died
// without a result (segfault, abort, OOM kill) into RUNTIME_ERROR naming the signal and stage.
//
// Thread-safety: call from the main thread of a single-threaded process (it forks).
#ifndef KFORGE_GPU_WORKER_EVAL_SUPERVISOR_H_
#define KFORGE_GPU_WORKER_EVAL_SUPERVISOR_H_

#include <sys/types.h>

#include <functional>
#include <string>

#include "kforge/v1/eval.pb.h"

namespace kforge::eval {

enum class Stage : char {
  kLoad = 'L',
  kBuild = 'B',
  kCorrectness = 'C',
  kTiming = 'T',
  kGpuWait = 'W',  // waiting for the GPU's turn (below); the stage before it resumes after it
};

const char* StageName(Stage s);

// The child's side: report stages, wait for the GPU's turn, deliver the result.
class StageReporter {
 public:
  // `turn_fd`: where the supervisor grants the GPU's turn (-1: no turns).
  explicit StageReporter(int fd, int turn_fd = -1) : fd_(fd), turn_fd_(turn_fd) {}
  void Enter(Stage stage);
  // Enters Stage::kGpuWait and blocks until the supervisor holds the GPU's turn for this
  // evaluation; true at once where there are no turns. False (with `error`) when the supervisor
  // is gone. The caller enters its next stage after it.
  bool AwaitGpuTurn(std::string* error);
  bool has_gpu_turns() const { return turn_fd_ >= 0; }
  void Deliver(const v1::EvalResult& result);

 private:
  int fd_;
  int turn_fd_;
};

struct SupervisorLimits {
  double load_s = 180;  // interpreter, torch, task and reference model
  double build_s = 120;
  double correctness_s = 120;
  double timing_s = 60;
  size_t max_output_bytes = 16 << 10;   // kept for the result's output_log
  size_t output_flood_bytes = 8 << 20;  // printing more than this ends the evaluation
};

// The request's limits (0 fields keep the defaults above).
SupervisorLimits LimitsFor(const v1::EvalRequest& request);

using EvaluationWork = std::function<v1::EvalResult(StageReporter&)>;

// Run around the fork by a process that forks with an interpreter loaded: `before` and `parent`
// in the supervisor, `child` first thing in the evaluation process (after its stdout and stderr
// point at the capture pipe). Any may be empty.
//
// `spawn`, where set, starts the evaluation process instead of a fork of the supervisor (the fork
// server's template process, serve.h, so that nothing the supervisor held reaches it), and then
// neither the hooks above nor `work` run here. It is handed the evaluation process's ends of
// its channels: `ctl` (stage reports and the result, as StageReporter's fd), `out` (its stdout
// and stderr) and `turn` (StageReporter's turn_fd, or -1), which it must not keep; it returns
// the process's pid, by then a child of the supervisor (which waits for it) and the leader of
// its own process group, or -1 with errno. `spare`: a child of the supervisor that is no part
// of any evaluation (that template process), which the strays' kill leaves alone.
struct ForkHooks {
  std::function<void()> before, parent, child;
  std::function<pid_t(int ctl, int out, int turn)> spawn;
  pid_t spare = -1;
};

// GPU turns (docs/evaluation.md, "GPU turns"): where several evaluation servers share one GPU,
// each is given its own open file description of one lock file per GPU, `lock_fd`. The
// evaluation asks for the turn (StageReporter::AwaitGpuTurn) once its CUDA contexts are made and
// before anything it measures or any task or candidate code runs; the supervisor takes the
// file's flock for it and keeps it until every process of the evaluation is gone. The
// evaluation process never holds the descriptor (it is closed right after the fork), so nothing
// in it can release or keep the lock.
struct GpuTurns {
  int lock_fd = -1;  // -1: no turns
  // The longest wait for the turn (stage gpu_wait), after which the evaluation ends with rule
  // gpu_turn_timeout: every other evaluation holds it for at most its own stage limits.
  double wait_s = 900;
};

v1::EvalResult RunSupervised(const SupervisorLimits& limits, const EvaluationWork& work,
                             const ForkHooks& hooks = {}, const GpuTurns& turns = {});

// The two ends of an evaluation process, shared by RunSupervised's fork and ForkHooks::spawn's
// (serve.h). First: dumpable again (the supervisor is not), the leader of a process group of
// its own, stdout and stderr into the capture pipe `out` (which is then closed).
void BecomeEvaluationProcess(int out);
// Last: `work` with a StageReporter on `ctl` and `turn`, then everything printed flushed, the
// result delivered and the process ended without destructors (a CUDA context broken by the
// candidate may hang or abort in teardown).
[[noreturn]] void RunEvaluationAndExit(int ctl, int turn, const EvaluationWork& work);

// True once processes of an evaluation outlived their SIGKILL by the strays' wait (30 s;
// KFORGE_STRAYS_WAIT_S in the environment, for tests): a chain of forks, each forking again
// before it is killed, or a process stuck in the driver. That evaluation's result is
// runtime_error, rule outlived_kill, and its GPU turn is not released: the process that ran
// RunSupervised must end (the fork server answers, then exits with status 3), upon which the
// worker's sandbox ends its PID namespace and every process in it, and the lock with them.
bool ProcessesOutlivedTheirKill();

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_SUPERVISOR_H_
