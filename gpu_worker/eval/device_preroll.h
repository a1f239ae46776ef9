// The device clock's pre-roll length, and which of its samples count (docs/evaluation.md,
// "Two clocks").
//
// A device-clock sample launches a program while a pre-roll kernel holds every SM, so that the
// program's launches queue and the host's gaps between them fall outside the GPU span. When the
// host is still launching after the pre-roll has ended (`late_host_ms` > 0), the GPU may have
// waited for it and the span holds that wait: the sample can only be too long. Such a sample is
// left out and the pre-roll grows, in the warm-up and during sampling alike, until it reaches
// its maximum; from then on late samples are kept (the cost of a longer pre-roll is paid by
// every sample) and the result says how late the host was. Leaving a late sample out never
// shortens what a program is timed: the samples kept are those with no host gap in them.
//
// Thread-safety: none; one evaluation's timing thread.
#ifndef KFORGE_GPU_WORKER_EVAL_DEVICE_PREROLL_H_
#define KFORGE_GPU_WORKER_EVAL_DEVICE_PREROLL_H_

#include <array>
#include <cstdint>

namespace kforge::eval {

class PrerollGovernor {
 public:
  // The pre-roll starts at `start_ms` and grows up to `max_ms`; a host later than
  // `tolerance_ms` makes a sample late.
  PrerollGovernor(double start_ms, double max_ms, double tolerance_ms);

  double preroll_ms() const { return preroll_ms_; }

  // Whether a program's sample, taken under the current pre-roll with the host still launching
  // `late_host_ms` after it ended, is used. Counts the samples left out.
  bool Keep(double late_host_ms);

  // After each iteration, with the latest host of its samples: grows the pre-roll when the host
  // was late. `sampled`: a sampled iteration (not a warm-up).
  void AfterIteration(double late_host_ms, bool sampled);

  // Shrinking (session 33; opt-in, KFORGE_PREROLL_SHRINK=1 in the evaluation's environment,
  // until a GPU A/B measures it). Without it the pre-roll only grows, by twice a late sample's
  // lateness and 0.1 ms: one late outlier sets it for the rest of the phase, and session 33's
  // profiles (call 4) found a microsecond program's reference launching in 0.12-0.28 ms under a
  // 1.2-1.4 ms pre-roll, or a 5 ms one, which is most of every sample's time. With it, after
  // kShrinkWindow sampled iterations in a row with no late sample, the pre-roll becomes
  // 1.5 x the longest launch noted (NoteLaunch) + 0.1 ms, if that is shorter, but never less
  // than half of it nor less than its floor. The launches that count are the candidate's in the
  // window and the reference's last kShrinkWindow (with a shared reference, the judge times it
  // in only one iteration of four), and there is no shrink before a reference launch is noted:
  // the candidate's word alone cannot shrink the pre-roll below what the reference needs.
  // The floor starts at the start and, after each sampled iteration that was late while the
  // pre-roll could still grow, rises above the pre-roll the host was late under (by twice the
  // tolerance and 0.1 ms, the least a late iteration grows it): a length that let a sample be
  // left out is not used again. So every sampled iteration with samples left out (one of each
  // program at most) raises the floor as growth alone raised the pre-roll, and there are no
  // more of them than without shrinking, 1 + (max - start) / (2 x tolerance + 0.1): a
  // candidate that claims lateness for its slow samples cannot have them left out again after
  // each shrink, and a program whose launch time has a tail rarer than the window is late a
  // few times, not after every shrink (session 34's review). A warm-up's lateness (its samples
  // are never kept) and lateness under the maximum (its samples are kept) leave the floor
  // where it is: the first calls' costs and a single late sample at 5 ms do not pin it high.
  static constexpr uint32_t kShrinkWindow = 16;
  void EnableShrink() { shrink_ = true; }
  // A sample's host launch time, from the pre-roll resident to the program's last launch
  // (the reference's from the judge's stamps, the candidate's from its claim). Anything but a
  // positive time (NaN, a negative or zero claim) is ignored.
  void NoteLaunch(double launch_ms, bool reference);
  double floor_ms() const { return floor_ms_; }
  uint32_t shrinks() const { return shrinks_; }

  // Samples left out as late; the latest host among the sampled iterations' kept samples.
  uint32_t dropped() const { return dropped_; }
  double late_kept_ms() const { return late_kept_ms_; }

  // Host-bound: in the first kHostBoundIterations sampled iterations under the longest
  // pre-roll, the host was more than kHostBoundLateMs late in at least half. Such a program's
  // spans hold the host's launch gaps whatever the pre-roll, vary with the host, and a stop
  // rule fitted where the host is hidden would sample them to the cap (docs/evaluation.md,
  // "Two clocks"). Decided once, at the end of that window, and never again: a candidate
  // process (which reports its own lateness) cannot pick the moment its sampling stops.
  static constexpr uint32_t kHostBoundIterations = 20;
  static constexpr double kHostBoundLateMs = 0.1;
  bool HostBound() const { return host_bound_; }
  uint32_t late_at_max() const { return late_at_max_; }
  uint32_t at_max() const { return at_max_; }

 private:
  bool CanGrow() const { return preroll_ms_ < max_ms_; }

  double preroll_ms_;
  double floor_ms_;  // the start, raised by late iterations: shrinking stops there
  const double max_ms_;
  const double tolerance_ms_;
  uint32_t dropped_ = 0;
  double late_kept_ms_ = 0;
  double late_kept_pending_ = 0;  // this iteration's latest kept sample
  // The first kHostBoundIterations sampled iterations under the longest pre-roll, and those
  // of them with the host late; the decision taken at their end.
  uint32_t at_max_ = 0, late_at_max_ = 0;
  bool host_bound_ = false;
  bool shrink_ = false;
  uint32_t on_time_ = 0, shrinks_ = 0;
  double window_launch_ms_ = 0;  // the candidate's longest launch since the window began
  std::array<double, kShrinkWindow> reference_launches_{};  // its last ones, in turn
  uint32_t reference_noted_ = 0;
};

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_DEVICE_PREROLL_H_
