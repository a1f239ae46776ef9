// Baseline mode (`kforge-eval --baseline DIR`): times the eager PyTorch reference of every
// task file under DIR in one process, with the same timing loop as evaluations (L2 flush,
// events, adaptive sampling), and writes one JSON line per task. For the baseline table in
// docs/benchmarks.md; a task that fails to load or run is reported with its error.
//
// Thread-safety: main thread; starts its own interpreter.
#ifndef KFORGE_GPU_WORKER_EVAL_BASELINE_H_
#define KFORGE_GPU_WORKER_EVAL_BASELINE_H_

#include <string>

namespace kforge::eval {

struct BaselineOptions {
  std::string dir;        // searched recursively for *.py
  std::string device;     // "cuda", "cuda:N", "cpu"
  std::string out_path;   // JSON lines; empty: stdout
  double per_task_cap_s = 2;
  unsigned min_samples = 10;
  bool events_clock = false;  // --timing-clock events: time by CUDA events, no activity trace
};

// Returns the process exit status (0 unless the interpreter or device could not start).
int RunBaseline(const BaselineOptions& options);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_BASELINE_H_
