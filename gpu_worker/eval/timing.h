// Interleaved timing of the reference and the candidate.
//
// Per sample, for each program in alternating order: flush L2 (a memset over twice the
// device's L2, after resetting persisting lines) on the current stream, synchronise the device,
// [pre-roll,] record a start event, run, record an end event; then wait for the end event, read
// the host clock, synchronise the whole device and read it again. The event interval is the
// measurement; the second host interval (the "tail": work still running on any stream after
// the end event) is used to detect work hidden on other streams.
// The optional pre-roll (`preroll_ms` > 0, replacing the memset flush) is a kernel that takes
// every thread slot of every SM for that long and then flushes L2 (preroll.cu); the program is
// launched while it runs, so the host's launch latency falls outside the events, and no kernel
// on any stream can start more than a few microseconds before the start event. Not safe for
// untrusted programs: their host code and copy-engine transfers still run unseen beside it.
// Input sets rotate between samples. Sampling stops once both programs have at least
// `min_samples` and the relative standard error of both medians (RelStderrOfMedian) is below
// `max_rel_stderr`, or when `time_cap_s` is spent. CPU mode uses the host clock alone and no flush.
//
// Thread-safety: one thread; the callables run on it.
#ifndef KFORGE_GPU_WORKER_EVAL_TIMING_H_
#define KFORGE_GPU_WORKER_EVAL_TIMING_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kforge/v1/eval.pb.h"

namespace kforge::eval {

struct TimingOptions {
  bool cuda = false;
  int device = 0;
  uint64_t l2_bytes = 0;
  uint32_t min_samples = 20;
  uint32_t max_samples = 2000;
  double max_rel_stderr = 0.005;
  double time_cap_s = 20;
  int warmup = 3;
  double preroll_ms = 0;  // 0: none (the device is idle when the start event is recorded)
};

// Runs one program on input set `set`.
using Program = std::function<void(int set)>;

struct TimingOutcome {
  v1::TimingStats reference;
  v1::TimingStats candidate;
  std::vector<double> ref_event_ms, cand_event_ms;  // raw samples
  std::vector<double> ref_tail_ms, cand_tail_ms;  // device busy after the end event
  bool hidden_work = false;   // the candidate's tail far exceeds the reference's
  std::string hidden_work_detail;
};

// An empty `candidate` times the reference alone (baselines).
TimingOutcome TimeInterleaved(const Program& reference, const Program& candidate, int num_sets,
                              const TimingOptions& options);

// The standard error of the samples' median relative to the median, from the distribution-free
// 95% confidence interval of the median (order statistics); 1 for fewer than 3 samples or a
// median <= 0. Robust to heavy tails: a few slow samples widen it by their count, not by
// their size.
double RelStderrOfMedian(std::vector<double> samples);

// Summary statistics of samples in milliseconds.
v1::TimingStats Summarise(std::vector<double> samples_ms);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_TIMING_H_
