// Interleaved timing of the reference and the candidate.
//
// Per sample, for each program in alternating order: flush L2 (a memset over twice the
// device's L2, after resetting persisting lines) on the current stream, synchronise the device,
// [pre-roll,] record a start event, run, record an end event; then wait for the end event, read
// the host clock, synchronise the whole device and read it again. The second host interval
// (the "tail": work still running on any stream after the end event) is used to detect work
// hidden on other streams.
// What a sample measures (`TimingOptions::clock`):
//  - kActivity (the default on a GPU when CUPTI loads): the GPU span of the call, from CUPTI's
//    records (activity_trace.h): from its first kernel, copy or memset to its last, on any
//    stream or copy engine. Host work before the first activity and after the last is not
//    counted: it can neither read the inputs nor write the outputs (device tensors) without a
//    kernel or a copy, and it is where the host's noise lies (on the H200 the host time
//    before a short program's first launch varied 30-90 us from second to second, the span
//    by a few percent). A sample whose events' interval exceeds the trace's whole window
//    (pre + lat + span + post) by more than max(0.05 ms, 5%) saw device work the trace did
//    not: a candidate's such sample is the events' interval, a reference's is left out. A
//    warm-up sample of either program the trace cannot account for puts the whole
//    evaluation on kEvents (clock_note says why).
//  - kEvents: the events' interval.
//  - kJudge: the judge's own clock (a GPU; engine.cc, "The trust boundary"): per sample, L2
//    flushed and the device drained, then the host time from the call's start to the end of
//    a device synchronisation after it. The program itself includes whatever proves its work
//    done (the engine: copying the candidate process's output slots), so no work of another
//    process can be left out of a sample. No events, no trace, no pre-roll.
//  - kReported: the program times itself and `TimingOptions::reported` returns the sample
//    (the device clock: DeviceClock below in the judge, the candidate process's device
//    samples); a NaN leaves the sample out (counted in event_fallbacks). The device is
//    drained before each sample; there is no flush (the pre-roll flushes).
// The optional pre-roll (`preroll_ms` > 0, replacing the memset flush) is a kernel that takes
// every thread slot of every SM for that long and then flushes L2 (preroll.cu); the program is
// launched while it runs, so its launches queue and the host's launch gaps fall outside the
// span. Under kEvents that is not safe for untrusted programs (their host code and
// copy-engine transfers run unseen beside it); under kActivity every copy and kernel is in
// the trace wherever it ran.
// With `IterationHooks::before` the caller prepares each iteration's inputs (the engine: fresh
// ones, or a few rotating sets). Sampling stops once both programs have at least
// `min_samples` and the relative standard error of both medians (RelStderrOfMedian) is below
// `max_rel_stderr`, or when `time_cap_s` is spent. CPU mode uses the host clock alone and no flush.
//
// Thread-safety: one thread; the callables run on it.
#ifndef KFORGE_GPU_WORKER_EVAL_TIMING_H_
#define KFORGE_GPU_WORKER_EVAL_TIMING_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kforge/v1/eval.pb.h"

namespace kforge::eval {

enum class TimingClock { kActivity, kEvents, kHost, kJudge, kReported };

// "activity", "events", "host", "judge", "reported".
const char* TimingClockName(TimingClock clock);

// How far a program's median moves between evaluations in separate processes beyond what one
// run's samples show (docs/evaluation.md, "Between processes"): the log of a median has a
// between-process standard deviation of sqrt(rel^2 / 2 + (abs_ms / median)^2), the log of a
// speedup sqrt(rel^2 + abs_ms^2 (1 / reference^2 + 1 / candidate^2)), each at most `max_sd`
// (a factor of e^max_sd: for programs of a few microseconds the fixed part would otherwise say
// more than the repeats show). Measured per clock on the H200 (engine.cc); all 0 where nothing
// was measured (CPU mode).
// Runs one program on input set `set`.
using Program = std::function<void(int set)>;

struct BetweenProcesses {
  double rel = 0;     // the part proportional to the times (of the speedup's log)
  double abs_ms = 0;  // a fixed time by which each program's median moves
  double max_sd = 0.5;

  double ProgramSd(double median_ms) const;
  double SpeedupSd(double reference_ms, double candidate_ms) const;
};

struct TimingOptions {
  bool cuda = false;
  int device = 0;
  uint64_t l2_bytes = 0;
  uint32_t min_samples = 20;
  // A program whose median so far is below `short_below_ms` needs `short_min_samples` (where
  // larger): the device clock's input placements, which move such programs most (engine.cc).
  uint32_t short_min_samples = 0;
  double short_below_ms = 0;
  uint32_t max_samples = 2000;
  double max_rel_stderr = 0.005;
  // The stop rule asks no more of a median than a standard error of half its between-process
  // deviation: past that, more samples hardly narrow the interval a repeat falls in.
  BetweenProcesses between;
  double time_cap_s = 20;
  int warmup = 3;
  double preroll_ms = 0;  // 0: none (the device is idle when the start event is recorded)
  // With the activity clock and no `preroll_ms`, this pre-roll (0: none): long enough for a
  // Python forward to queue a few launches on the H200's host (docs/decisions.md, "Timing:
  // the activity clock"). It gives way to the drained sample where it cannot hold the GPU
  // (another process on it, say), and goes with the activity clock.
  double activity_preroll_ms = 0.2;
  // On a GPU: kActivity falls back to kEvents (saying why) when CUPTI cannot be used, unless
  // `require_clock`, which makes that an error. Ignored in CPU mode (kHost).
  TimingClock clock = TimingClock::kActivity;
  bool require_clock = false;
  std::function<double()> reported;  // kReported: the sample the program just took
  // A shared reference (docs/evaluation.md, "Sharing the reference"): the reference's samples
  // from an earlier evaluation of the same task on this slot. With them, the reference is timed
  // in the first 8 sampled iterations, then only where `reference_timed(i)` (i counts sampled
  // iterations from 0), and otherwise `reference_untimed` runs (its outputs, for the checks; no
  // flush, no sample); the stop rule uses the shared samples and the new ones together and
  // waits for the 8. At the end the new samples' median is compared with the shared ones':
  // more than 1% apart, the shared samples are dropped and the statistics are the new ones'.
  // Asked after each sampled iteration once both programs have `min_samples`: true ends the
  // sampling there, not capped, though the stop rule was not met (TimingOutcome::settled).
  // The device clock's host-bound programs (device_preroll.h, HostBound).
  std::function<bool()> settled;
  // The slow stop (docs/evaluation.md, "Stop rule and cap"): once each program has
  // `slow_min_samples` (the reference's pooled with shared ones) and every reference sample is
  // shorter than `slow_below` times every candidate sample less `slow_offset_ms` (what may
  // still be subtracted from the candidate's samples after the sampling: the call clock's
  // hop), the sampling ends there, settled (TimingOutcome::slow). The speedup is then below
  // `slow_below` whatever more samples would say. 0: never.
  double slow_below = 0;
  uint32_t slow_min_samples = 5;
  double slow_offset_ms = 0;
  std::vector<double> shared_reference_ms;
  std::function<bool(uint32_t)> reference_timed;
  Program reference_untimed;
};

// Optional calls around each iteration (one warm-up pair, or one sampled pair, numbered from 0
// over warm-up and sampling alike), outside every timed region. `before` prepares the
// iteration's inputs and returns the set index the programs get; `after` checks what they
// produced and returns false to stop the timing (TimingOutcome::stopped_at).
struct IterationHooks {
  std::function<int(uint32_t iteration)> before;
  std::function<bool(uint32_t iteration)> after;
};

// One program's samples, in timed order.
struct ProgramSamples {
  std::vector<double> ms;        // what the statistics use (per the clock)
  std::vector<double> event_ms;  // the events' interval (CPU mode: host clock)
  std::vector<double> tail_ms;   // device busy after the end event
  std::vector<double> pre_ms, lat_ms, span_ms, host_ms;  // the trace's split (kActivity)
  uint32_t event_fallbacks = 0;  // kActivity samples timed by the events instead
};

struct TimingOutcome {
  v1::TimingStats reference;
  v1::TimingStats candidate;
  ProgramSamples ref, cand;
  TimingClock clock = TimingClock::kHost;  // the clock used
  double preroll_ms = 0;                   // the pre-roll used at the end (0: none)
  std::string clock_note;  // why the activity clock or a pre-roll was not used
  bool hidden_work = false;   // the candidate's tail far exceeds the reference's
  std::string hidden_work_detail;
  int64_t stopped_at = -1;  // the iteration whose `after` hook stopped the timing (-1: none)
  bool settled = false;     // TimingOptions::settled or the slow stop ended the sampling
  bool slow = false;        // the slow stop did (TimingOptions::slow_below)
  // With TimingOptions::shared_reference_ms: how many of them `reference` counts besides the
  // new samples (`ref.ms` holds only the new ones), or 0 where they were dropped
  // (`shared_reference_note` says why).
  uint32_t shared_reference_used = 0;
  std::vector<double> shared_reference_ms;  // those samples, in the order `reference` pooled them
  std::string shared_reference_note;
};

// An empty `candidate` times the reference alone (baselines). Without `hooks.before`, every
// iteration runs set 0.
TimingOutcome TimeInterleaved(const Program& reference, const Program& candidate,
                              const TimingOptions& options, const IterationHooks& hooks = {});

// How many addresses a timing phase's input sets lie at in turn (docs/evaluation.md, "Timing";
// iteration i uses set i mod the count, which stayed alive until then): up to
// kInputPlacements for the device clock's phase with fresh inputs, while that many sets of
// `set_bytes` fit in kPlacementBytes; otherwise 1. On the H200 a program of a few
// microseconds read 1-13% apart between placements of its inputs in one process, and a
// process's placement is fixed: the median pooled over 8 moved 0.02-1.5% between processes,
// one placement's 0.6-4.6% (session 23). The call clock's phase keeps one: its samples are the
// host's, whose noise is far above that, and with placements in both phases its repeats fell
// outside their intervals more often (session 23: 12 of 64 in call 4, 4 of 64 in call 2),
// which one run cannot tell from noise. Rotating sets (slow get_inputs()) are placed as they
// are made.
inline constexpr int kInputPlacements = 8;
inline constexpr int64_t kPlacementBytes = 256LL << 20;
int InputPlacements(bool fresh, bool device_phase, int64_t set_bytes);

// The standard error of the samples' median relative to the median, from the distribution-free
// 95% confidence interval of the median (order statistics); 1 for fewer than 3 samples or a
// median <= 0. Robust to heavy tails: a few slow samples widen it by their count, not by
// their size.
double RelStderrOfMedian(std::vector<double> samples);

// The slow stop's test (TimingOptions::slow_below): both programs have `slow_min_samples`, and
// the slowest reference sample is shorter than `slow_below` times the fastest candidate sample
// less `slow_offset_ms`. Pure function.
bool SlowEnough(const std::vector<double>& reference_ms, const std::vector<double>& candidate_ms,
                const TimingOptions& options);

// The call clock's hop to subtract from each candidate sample (docs/evaluation.md, "Two
// clocks"): the calibration's fastest null call, `calibrated_ms`, but no more than what the
// candidate's fastest sample (`raw_ms`, the judge's) left beside its fastest own time
// (`claims_ms`, the candidate process's forward as it measured it). A calibration made while
// the machine was busier than during the candidate's calls would otherwise subtract part of
// the candidate's work. The claims can only lower what is subtracted (a candidate that
// inflates them lengthens its own time), never raise it past the calibration. Pure function.
double CallHopMs(double calibrated_ms, const std::vector<double>& raw_ms,
                 const std::vector<double>& claims_ms);

// Summary statistics of samples in milliseconds, with the median's 95% interval.
v1::TimingStats Summarise(std::vector<double> samples_ms);

// reference median / candidate median, and a 95% interval of it that a repeat evaluation in
// another process falls in: the reference's interval bounds over the candidate's (conservative
// for a ratio), widened in log space, in quadrature, by 1.96 * sqrt(2) between-process standard
// deviations (the first run's and the repeat's). `between_sd` is that deviation (0: none).
// All 0 without two positive medians.
struct SpeedupInterval {
  double speedup = 0, low = 0, high = 0;
  double between_sd = 0;
};
SpeedupInterval SpeedupOf(const v1::TimingStats& reference, const v1::TimingStats& candidate,
                          const BetweenProcesses& between = {});

// DeviceClock::Reading::why_not of a call in which the trace recorded no GPU work at all (no
// kernel, copy or memset): the `no_work` rule (runtime_rules.h) counts these.
inline constexpr char kNoGpuActivity[] = "no GPU activity was recorded for the call";

// The device clock (docs/evaluation.md, "Two clocks"): one sample of a program is the GPU
// span, from CUPTI's records, of every kernel, copy and memset it launched on any stream,
// launched while a pre-roll kernel holds every SM (so the host's launch gaps fall outside the
// span) and after the pre-roll flushed L2. Used by the judge for the reference and by the
// candidate process for the candidate's device samples. One per process (CUPTI).
class DeviceClock {
 public:
  // Null with `why_not` when CUPTI or the pre-roll cannot be used on `device`.
  static std::unique_ptr<DeviceClock> Start(int device, uint64_t l2_bytes, std::string* why_not);
  ~DeviceClock();
  DeviceClock(const DeviceClock&) = delete;
  DeviceClock& operator=(const DeviceClock&) = delete;

  struct Reading {
    bool ok = false;
    double span_ms = 0;
    double busy_ms = 0;  // CallSplit::busy_ms
    double work_ms = 0;  // CallSplit::work_ms
    bool queued = false;  // CallSplit::queued: work_ms is the call's device time
    // How long the host was still launching after the pre-roll ended (the pre-roll was that
    // much too short, and the span holds launch gaps).
    double late_host_ms = 0;
    std::string why_not;  // !ok: kNoGpuActivity, records dropped, unseen device work
    // ok: the names of the call's kernels, each once (mangled for C++ linkage).
    std::vector<std::string> kernels;
    // The sample's steps (kDeviceSampleSteps, call_profile.h): microseconds from its start to
    // the end of each, for KFORGE_CALL_PROFILE's line of the reference's device samples.
    std::vector<double> steps_us;
    // The host's launch time, from the pre-roll resident to the call's last launch (the
    // "preroll" step's end to the "launch" step's): PrerollGovernor::NoteLaunch.
    double launch_ms = 0;
  };
  // Drains the device, launches a pre-roll of `preroll_ms`, runs `p` and reads its span.
  // Throws std::runtime_error on CUDA errors (a fault of `p` surfaces there).
  Reading Sample(const std::function<void()>& p, double preroll_ms);
  // Seconds this clock spent in CUPTI's activity flushes so far: before each sample what ran
  // since the last is discarded, after it the sample's records are collected (StageDurations
  // timing_trace_s).
  double trace_s() const;

 private:
  struct Impl;
  explicit DeviceClock(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_TIMING_H_
