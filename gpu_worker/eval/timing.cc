#include "gpu_worker/eval/timing.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "gpu_worker/eval/activity_trace.h"
#include "gpu_worker/eval/call_profile.h"
#include "gpu_worker/eval/cuda_driver.h"
#include "gpu_worker/eval/preroll_fatbin.h"

namespace kforge::eval {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

void CheckCuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
  }
}

double MedianOfSorted(const std::vector<double>& v) {
  if (v.empty()) return 0;
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return MedianOfSorted(v);
}

// How far the events' interval may exceed the activity trace's window (pre + lat + span +
// post) before the sample counts as device work the trace did not see: the difference of the
// two events' submission latencies, which on the H200's host reached tens of microseconds in
// slow phases (0.02 ms made 1-13 of a tiny program's samples fall back there).
double UnaccountedSlackMs(double event_ms) { return std::max(0.05, 0.05 * event_ms); }

}  // namespace

const char* TimingClockName(TimingClock clock) {
  switch (clock) {
    case TimingClock::kActivity:
      return "activity";
    case TimingClock::kEvents:
      return "events";
    case TimingClock::kHost:
      return "host";
    case TimingClock::kJudge:
      return "judge";
    case TimingClock::kReported:
      return "reported";
  }
  return "unknown";
}

namespace {

constexpr double kZ = 1.96;
// TimingOptions::between: the share of a median's between-process deviation that its standard
// error may keep: at half, the order-statistic intervals of both medians widen the interval a
// repeat falls in by about 12% over exact medians.
constexpr double kStopShareOfBetween = 0.5;
// ... but never more than this: the point speedup is what rewards and leaderboards use, and a
// median known to 25% (a few-microsecond program on the call clock) would reward resubmitting.
constexpr double kMaxStopRelStderr = 0.03;

// The distribution-free 95% confidence interval of the median of sorted `v` (n >= 3): the
// order statistics at ranks n/2 -+ 1.96 sqrt(n)/2 (normal approximation of Binomial(n, 1/2)).
std::pair<double, double> MedianInterval(const std::vector<double>& v) {
  const size_t n = v.size();
  const double half_ranks = kZ * std::sqrt(static_cast<double>(n)) / 2;
  const double mid = static_cast<double>(n) / 2;
  const auto lo = static_cast<size_t>(std::max(0.0, std::floor(mid - half_ranks) - 1));
  const auto hi = std::min(n - 1, static_cast<size_t>(std::ceil(mid + half_ranks)));
  return {v[lo], v[hi]};
}

}  // namespace

double CallHopMs(double calibrated_ms, const std::vector<double>& raw_ms,
                 const std::vector<double>& claims_ms) {
  double hop = std::max(calibrated_ms, 0.0);
  if (raw_ms.empty() || claims_ms.empty()) return hop;
  double fastest_claim = std::numeric_limits<double>::infinity();
  for (double c : claims_ms) {
    if (c > 0 && std::isfinite(c)) fastest_claim = std::min(fastest_claim, c);
  }
  if (!std::isfinite(fastest_claim)) return hop;
  const double room = *std::min_element(raw_ms.begin(), raw_ms.end()) - fastest_claim;
  return std::min(hop, std::max(room, 0.0));
}

int InputPlacements(bool fresh, bool device_phase, int64_t set_bytes) {
  if (!fresh || !device_phase) return 1;
  return static_cast<int>(
      std::clamp<int64_t>(kPlacementBytes / std::max<int64_t>(set_bytes, 1), 1, kInputPlacements));
}

double RelStderrOfMedian(std::vector<double> v) {
  if (v.size() < 3) return 1;
  std::sort(v.begin(), v.end());
  const double med = MedianOfSorted(v);
  if (med <= 0) return 1;
  // The interval's half width over 1.96 is the median's standard error for normal samples (it
  // converges to 1.2533 sd/sqrt(n)), and unlike the standard deviation it ignores how far the
  // tail samples lie, only how many there are.
  auto [lo, hi] = MedianInterval(v);
  return (hi - lo) / 2 / kZ / med;
}

namespace {

// One program's sample.
struct Sample {
  double ms = 0;        // the measurement (per the clock)
  double event_ms = 0;  // start to end event on the current stream (CPU mode: host clock)
  double tail_ms = 0;   // how long the device stayed busy after the end event (GPU only)
  CallSplit split;      // kActivity only
  bool event_fallback = false;  // kActivity: the trace did not account for the events
  bool dropped = false;         // kActivity: CUPTI dropped records during the sample
  // A device-clock sample's steps (kDeviceSampleSteps, call_profile.h): microseconds from the
  // sample's start to the end of each.
  std::vector<double> steps_us;
};

class Sampler {
 public:
  explicit Sampler(const TimingOptions& o) : o_(o) {
    if (!o_.cuda) {
      clock_ = TimingClock::kHost;
      return;
    }
    CheckCuda(cudaSetDevice(o_.device), "cudaSetDevice");
    CheckCuda(cudaEventCreate(&start_), "cudaEventCreate");
    CheckCuda(cudaEventCreate(&end_), "cudaEventCreate");
    flush_bytes_ = std::max<uint64_t>(2 * o_.l2_bytes, 8 << 20);
    flush_ = at::empty({static_cast<int64_t>(flush_bytes_)},
                       at::TensorOptions().dtype(at::kByte).device(at::kCUDA, o_.device));
    cudaCtxResetPersistingL2Cache();
    if (o_.clock == TimingClock::kJudge || o_.clock == TimingClock::kReported) {
      clock_ = o_.clock;
      return;
    }
    clock_ = TimingClock::kEvents;
    if (o_.clock == TimingClock::kActivity) {
      std::string why_not;
      trace_ = ActivityTrace::Start(&why_not);
      if (trace_) {
        clock_ = TimingClock::kActivity;
      } else if (o_.require_clock) {
        throw std::runtime_error("kforge: the activity clock is not available: " + why_not);
      } else {
        AddNote("activity clock not available (" + why_not + "); timed by CUDA events");
      }
    }
    preroll_ms_ = o_.preroll_ms;
    if (preroll_ms_ <= 0 && trace_ && o_.activity_preroll_ms > 0) {
      preroll_ms_ = o_.activity_preroll_ms;
      auto_preroll_ = true;
    }
    if (preroll_ms_ <= 0) return;
    if (!auto_preroll_) {
      LoadPreroll();
      return;
    }
    try {
      LoadPreroll();
    } catch (const std::runtime_error& e) {
      DropPreroll(e.what());
    }
  }
  ~Sampler() {
    if (!o_.cuda || clock_ == TimingClock::kJudge || clock_ == TimingClock::kReported) return;
    // A pre-roll that timed out may still run (bounded in cycles) when its module goes.
    if (preroll_module_) cudaDeviceSynchronize();
    cudaEventDestroy(start_);
    cudaEventDestroy(end_);
    if (host_flag_) cudaFreeHost(const_cast<unsigned*>(host_flag_));
    if (preroll_module_) GetDriver().module_unload(preroll_module_);
  }

  // `with_preroll` false: a drained sample even when the pre-roll is loaded.
  Sample Run(const Program& p, int set, bool with_preroll = true) {
    Sample s;
    if (clock_ == TimingClock::kReported) {
      // The program times itself (its own pre-roll flushes L2); the device drains first so that
      // nothing of the previous sample runs into it.
      if (o_.cuda) CheckCuda(cudaDeviceSynchronize(), "synchronize before sample");
      p(set);
      s.ms = s.event_ms = o_.reported ? o_.reported() : std::nan("");
      return s;
    }
    if (!o_.cuda) {
      auto t0 = Clock::now();
      p(set);
      s.ms = s.event_ms = Ms(Clock::now() - t0);
      return s;
    }
    // The device drains before the start event is recorded, so nothing the program launches,
    // on any stream, can run before it. With a pre-roll (the activity clock's default) the
    // program launches while the pre-roll kernel holds every SM, once all of its blocks are
    // resident, so its launches queue. No kernel of the program's, on any stream, starts
    // before the pre-roll's blocks retire; what needs no SM (host code, copy-engine
    // transfers) can run beside it, which the activity trace sees and the events do not
    // (docs/decisions.md, "Timing: a pre-roll kernel that holds every SM", "Timing: the
    // activity clock").
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream(o_.device).stream();
    if (clock_ == TimingClock::kJudge) {
      Flush(stream);
      CheckCuda(cudaDeviceSynchronize(), "synchronize before sample");
      auto t0 = Clock::now();
      p(set);
      CheckCuda(cudaDeviceSynchronize(), "synchronize after sample");
      s.ms = s.event_ms = Ms(Clock::now() - t0);
      return s;
    }
    const bool preroll = preroll_module_ != nullptr && with_preroll;
    // The steps' stamps (kDeviceSampleSteps), reserved first so that no stamp allocates.
    const auto started = Clock::now();
    s.steps_us.reserve(std::size(kDeviceSampleSteps));
    auto stamp = [&](Clock::time_point at = Clock::now()) {
      s.steps_us.push_back(std::chrono::duration<double, std::micro>(at - started).count());
    };
    if (!preroll) Flush(stream);
    CheckCuda(cudaDeviceSynchronize(), "synchronize before sample");
    stamp();  // drain
    // What ran since the last sample (the caller's work between samples: inputs, checks) is
    // not this call's, nor is a record CUPTI dropped meanwhile.
    if (trace_) trace_->Discard();
    stamp();  // discard
    if (trace_) trace_s_ += (s.steps_us[1] - s.steps_us[0]) / 1e6;
    if (preroll) {
      try {
        Preroll(stream);  // ends with the flush
      } catch (const std::runtime_error& e) {
        if (!auto_preroll_) throw;
        DropPreroll(e.what());  // the default pre-roll gives way to the drained sample
        Flush(stream);
        CheckCuda(cudaDeviceSynchronize(), "synchronize before sample");
      }
    }
    stamp();  // preroll
    // The trace's window opens before the start event is recorded and closes after the end
    // event is, so that the events' interval exceeds it only by the difference of the two
    // events' own submission latencies (plus any device work the trace did not see).
    const uint64_t mark = trace_ ? trace_->Now() : 0;
    CheckCuda(cudaEventRecord(start_, stream), "record start");
    p(set);
    CheckCuda(cudaEventRecord(end_, stream), "record end");
    const uint64_t ret = trace_ ? trace_->Now() : 0;
    stamp();  // launch
    CheckCuda(cudaEventSynchronize(end_), "wait for the end event");
    auto t_end = Clock::now();
    stamp(t_end);  // wait
    // Work the program left on other streams keeps the device busy past its end event.
    CheckCuda(cudaDeviceSynchronize(), "synchronize after sample");
    s.tail_ms = Ms(Clock::now() - t_end);
    stamp();  // drain2
    float ev = 0;
    CheckCuda(cudaEventElapsedTime(&ev, start_, end_), "event elapsed time");
    s.ms = s.event_ms = ev;
    if (trace_) {
      const auto t = Clock::now();
      s.split = trace_->Collect(mark, ret, &s.dropped);
      trace_s_ += std::chrono::duration<double>(Clock::now() - t).count();
      // The sample is the GPU span, from the call's first kernel, copy or memset to its last
      // on any stream, or the call's host time when that is longer (a program bound by its
      // host side costs that much a call, called back to back). The host's latency before
      // the first launch does not lengthen a sample whose GPU work is longer: that work can
      // neither read the inputs nor write the outputs (device tensors) without a kernel or a
      // copy. Where the events saw device time the trace did not (untraced work, dropped
      // records), the events' interval is the sample.
      s.event_fallback = !s.split.found || s.dropped ||
                         s.event_ms - s.split.window_ms > UnaccountedSlackMs(s.event_ms);
      if (!s.event_fallback) s.ms = std::max(s.split.span_ms, s.split.host_ms);
    }
    stamp();  // collect
    return s;
  }

  TimingClock clock() const { return clock_; }
  // Seconds spent in the activity trace's flushes (each sample's Discard and Collect).
  double trace_s() const { return trace_s_; }
  const std::string& clock_note() const { return clock_note_; }

  double preroll_ms() const { return preroll_module_ ? preroll_ms_ : 0; }
  // The loaded pre-roll's length for the next samples (DeviceClock).
  void SetPrerollMs(double ms) { preroll_ms_ = ms; }

  // Times by the events from now on (the activity trace could not account for a warm-up
  // sample), saying why. The default pre-roll goes too: under the events clock the host code
  // and copies of a call would run beside it unseen.
  void FallBackToEvents(const std::string& why) {
    trace_.reset();
    clock_ = TimingClock::kEvents;
    AddNote(why);
    if (auto_preroll_) DropPreroll("timed by CUDA events");
  }

  // Adds to the note that says how the samples were taken.
  void AddNote(const std::string& note) {
    clock_note_ += (clock_note_.empty() ? "" : "; ") + note;
  }

 private:
  // Samples without the pre-roll from now on (the drained sample), saying why.
  void DropPreroll(const std::string& why) {
    if (preroll_module_) {
      cudaDeviceSynchronize();  // a refused pre-roll may still run, bounded in cycles
      GetDriver().module_unload(preroll_module_);
      preroll_module_ = nullptr;
    }
    AddNote("no timing pre-roll (" + why + ")");
  }

  void Flush(cudaStream_t stream) {
    CheckCuda(cudaMemsetAsync(flush_.data_ptr(), ++flush_value_ & 0xff, flush_bytes_, stream),
              "L2 flush");
  }

  void LoadPreroll() {
    CheckCu(GetDriver().module_load_data(&preroll_module_, kPrerollFatbin),
            "loading the timing pre-roll kernel");
    CheckCu(GetDriver().module_get_function(&preroll_, preroll_module_, "kforge_preroll"),
            "finding the timing pre-roll kernel");
    int sms = 0, threads_per_sm = 0, resident = 0;
    CheckCuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, o_.device),
              "multiprocessor count");
    CheckCuda(cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor,
                                     o_.device),
              "threads per multiprocessor");
    CheckCu(GetDriver().occupancy_max_blocks(&resident, preroll_, kPrerollBlock, 0),
            "the timing pre-roll kernel's occupancy");
    // Every thread slot of every SM (2048 or 1536 per SM on the GPUs built for, both
    // multiples of the block), so no other kernel fits beside it.
    const int per_sm = (threads_per_sm + kPrerollBlock - 1) / kPrerollBlock;
    if (resident < per_sm) {
      throw std::runtime_error("kforge: the timing pre-roll kernel fits " +
                               std::to_string(resident) + " blocks of " +
                               std::to_string(kPrerollBlock) + " threads on an SM, not the " +
                               std::to_string(per_sm) + " that fill it");
    }
    preroll_blocks_ = static_cast<unsigned>(sms * per_sm);
    // PrerollState (preroll.cu): first_start = ~0, deadline = 0, arrived = 0, generation = 0.
    const uint64_t init[3] = {~0ULL, 0, 0};
    preroll_state_ = at::empty({sizeof init},
                               at::TensorOptions().dtype(at::kByte).device(at::kCUDA, o_.device));
    CheckCuda(cudaMemcpy(preroll_state_.data_ptr(), init, sizeof init, cudaMemcpyHostToDevice),
              "pre-roll state");
    void* flag = nullptr;
    CheckCuda(cudaHostAlloc(&flag, sizeof(unsigned), cudaHostAllocMapped), "pinned flag");
    host_flag_ = static_cast<volatile unsigned*>(flag);
    *host_flag_ = 0;
    CheckCuda(cudaHostGetDevicePointer(&device_flag_, flag, 0), "mapped flag");
  }

  // Launches the pre-roll, which ends with the L2 flush, and returns once all of its blocks are
  // resident. Throws when they were not resident together (the grid ran in waves, so other
  // kernels could have run beside it) or not within 5 s.
  void Preroll(cudaStream_t stream) {
    unsigned long long duration_ns = static_cast<unsigned long long>(preroll_ms_ * 1e6);
    // A bound in SM cycles for every wait, in case the global timer stalls: 8 cycles a
    // nanosecond is four times the duration at the highest SM clocks (about 2 GHz).
    long long max_cycles = static_cast<long long>(duration_ns) * 8 + 1000000;
    unsigned generation = ++generation_;
    void* state = preroll_state_.data_ptr();
    void* flush = flush_.data_ptr();
    unsigned long long flush_words = flush_bytes_ / 16;
    unsigned flush_value = static_cast<unsigned>(++flush_value_ & 0xff) * 0x01010101u;
    void* args[] = {&duration_ns, &max_cycles, &generation, &state,
                    &device_flag_, &flush, &flush_words, &flush_value};
    CheckCu(GetDriver().launch_kernel(preroll_, preroll_blocks_, 1, 1, kPrerollBlock, 1, 1, 0,
                                      reinterpret_cast<CUstream>(stream), args, nullptr),
            "launching the timing pre-roll kernel");
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    unsigned seen = 0;
    while (((seen = *host_flag_) & 0x7fffffffu) != generation) {
      if (Clock::now() > deadline) {
        throw std::runtime_error("kforge: the timing pre-roll kernel's " +
                                 std::to_string(preroll_blocks_) +
                                 " blocks were not all resident within 5 s");
      }
    }
    if (seen & 0x80000000u) {
      throw std::runtime_error(
          "kforge: the timing pre-roll kernel's blocks were not all resident at once (another "
          "process shares the GPU?), so it cannot keep other work off the device");
    }
  }

  static constexpr unsigned kPrerollBlock = 512;  // preroll.cu's __launch_bounds__

  const TimingOptions& o_;
  TimingClock clock_ = TimingClock::kHost;
  std::string clock_note_;
  double preroll_ms_ = 0;     // the pre-roll asked for, or the activity clock's default
  bool auto_preroll_ = false;  // the latter: it gives way to the drained sample on failure
  std::unique_ptr<ActivityTrace> trace_;
  double trace_s_ = 0;
  cudaEvent_t start_ = nullptr, end_ = nullptr;
  CUmodule preroll_module_ = nullptr;
  CUfunction preroll_ = nullptr;
  unsigned preroll_blocks_ = 0;
  unsigned generation_ = 0;
  at::Tensor preroll_state_;
  volatile unsigned* host_flag_ = nullptr;
  void* device_flag_ = nullptr;
  at::Tensor flush_;
  uint64_t flush_bytes_ = 0;
  int flush_value_ = 0;
};

}  // namespace

v1::TimingStats Summarise(std::vector<double> v) {
  v1::TimingStats s;
  if (v.empty()) return s;
  double mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  s.set_mean_ms(mean);
  s.set_std_ms(v.size() > 1 ? std::sqrt(var / (v.size() - 1)) : 0);
  s.set_min_ms(*std::min_element(v.begin(), v.end()));
  s.set_max_ms(*std::max_element(v.begin(), v.end()));
  std::sort(v.begin(), v.end());
  s.set_median_ms(MedianOfSorted(v));
  s.set_n(static_cast<uint32_t>(v.size()));
  auto [lo, hi] = v.size() >= 3 ? MedianInterval(v) : std::make_pair(v.front(), v.back());
  s.set_median_ci_low_ms(lo);
  s.set_median_ci_high_ms(hi);
  return s;
}

double BetweenProcesses::ProgramSd(double median_ms) const {
  const double fixed = median_ms > 0 ? abs_ms / median_ms : max_sd;
  return std::min(max_sd, std::sqrt(rel * rel / 2 + fixed * fixed));
}

double BetweenProcesses::SpeedupSd(double reference_ms, double candidate_ms) const {
  const double ref = ProgramSd(reference_ms), cand = ProgramSd(candidate_ms);
  return std::min(max_sd, std::sqrt(ref * ref + cand * cand));
}

SpeedupInterval SpeedupOf(const v1::TimingStats& reference, const v1::TimingStats& candidate,
                          const BetweenProcesses& between) {
  SpeedupInterval r;
  if (!(reference.median_ms() > 0) || !(candidate.median_ms() > 0)) return r;
  r.speedup = reference.median_ms() / candidate.median_ms();
  r.low = candidate.median_ci_high_ms() > 0 ? reference.median_ci_low_ms() / candidate.median_ci_high_ms()
                                            : r.speedup;
  r.high = candidate.median_ci_low_ms() > 0 ? reference.median_ci_high_ms() / candidate.median_ci_low_ms()
                                            : r.speedup;
  r.low = std::min(r.low, r.speedup);
  r.high = std::max(r.high, r.speedup);
  r.between_sd = between.SpeedupSd(reference.median_ms(), candidate.median_ms());
  if (r.between_sd > 0 && r.low > 0) {
    // A repeat differs from this run by both runs' between-process deviations.
    const double repeat = kZ * std::sqrt(2.0) * r.between_sd;
    const double below = std::log(r.speedup / r.low), above = std::log(r.high / r.speedup);
    r.low = r.speedup * std::exp(-std::sqrt(below * below + repeat * repeat));
    r.high = r.speedup * std::exp(std::sqrt(above * above + repeat * repeat));
  }
  return r;
}

namespace {

// The stop rule for one program's samples (TimingOptions::max_rel_stderr and ::between).
bool PreciseEnough(const std::vector<double>& ms, const TimingOptions& o) {
  const double rse = RelStderrOfMedian(ms);
  if (rse < o.max_rel_stderr) return true;
  if (o.between.rel <= 0 && o.between.abs_ms <= 0) return false;
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  return rse < std::min(kMaxStopRelStderr,
                        kStopShareOfBetween * o.between.ProgramSd(MedianOfSorted(sorted)));
}

void Add(const Sample& s, bool is_reference, ProgramSamples* p) {
  if (!std::isfinite(s.ms)) {  // kReported: the program could not time this sample
    ++p->event_fallbacks;
    return;
  }
  // A reference sample the trace could not account for is left out rather than timed by its
  // events, which also count the host's launch latency and so would inflate the speedup.
  if (s.event_fallback && is_reference) {
    ++p->event_fallbacks;
    return;
  }
  p->ms.push_back(s.ms);
  p->event_ms.push_back(s.event_ms);
  p->tail_ms.push_back(s.tail_ms);
  if (s.split.found) {
    p->pre_ms.push_back(s.split.pre_ms);
    p->lat_ms.push_back(s.split.lat_ms);
    p->span_ms.push_back(s.split.span_ms);
    p->host_ms.push_back(s.split.host_ms);
  }
  if (s.event_fallback) ++p->event_fallbacks;
}

}  // namespace

namespace {

// TimingOptions::shared_reference_ms, during one TimeInterleaved.
class SharedReference {
 public:
  explicit SharedReference(const TimingOptions& o)
      : o_(o),
        shared_(o.shared_reference_ms),
        on_(!shared_.empty() && o.reference_timed && o.reference_untimed) {
    if (!on_) shared_.clear();
  }

  // Whether sampled iteration `i` times the reference, `fresh` new samples in: every one until
  // kDriftSamples are in, then the chosen ones.
  bool TimesReference(uint32_t i, size_t fresh) const {
    return !on_ || fresh < kDriftSamples || o_.reference_timed(i);
  }

  // At the end: drops the shared samples if the new ones are too few to compare (the time cap
  // came first) or their median has drifted from theirs by more than kDriftTolerance; the
  // statistics are then the new samples' alone.
  void Check(const std::vector<double>& fresh) {
    if (!on_) return;
    if (fresh.size() < kDriftSamples) {
      Drop("only " + std::to_string(fresh.size()) + " new samples, too few to compare");
      return;
    }
    const double was = Median(shared_), now = Median(fresh);
    if (was > 0 && std::abs(now / was - 1) <= kDriftTolerance) return;
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "its median %.4g ms, the %zu new samples' %.4g ms (more than %.1f%% apart)", was,
                  fresh.size(), now, 100 * kDriftTolerance);
    Drop(buf);
  }

  // The samples the statistics use: the shared ones while they are kept, then the new ones.
  std::vector<double> Pooled(const std::vector<double>& fresh) const {
    if (!on_) return fresh;
    std::vector<double> all = shared_;
    all.insert(all.end(), fresh.begin(), fresh.end());
    return all;
  }

  // The stop rule also waits for the drift check.
  bool EnoughNew(const std::vector<double>& fresh) const {
    return !on_ || fresh.size() >= kDriftSamples;
  }

  uint32_t used() const { return on_ ? static_cast<uint32_t>(shared_.size()) : 0; }
  // The shared samples Pooled puts first (empty where they were dropped).
  const std::vector<double>& samples() const { return shared_; }
  const std::string& note() const { return note_; }

 private:
  void Drop(const std::string& why) {
    note_ = "the shared reference was dropped: " + why + "; the reference's own samples only";
    on_ = false;
    shared_.clear();
  }

  static constexpr size_t kDriftSamples = 8;
  // Below the device clock's whole between-process allowance for a repeat (about +-1.4% for
  // programs of 50 us and more), so a share that passes cannot move a speedup out of its
  // interval by itself.
  static constexpr double kDriftTolerance = 0.01;

  const TimingOptions& o_;
  std::vector<double> shared_;
  bool on_;
  std::string note_;
};

}  // namespace

bool SlowEnough(const std::vector<double>& reference_ms, const std::vector<double>& candidate_ms,
                const TimingOptions& o) {
  if (!(o.slow_below > 0) || reference_ms.size() < o.slow_min_samples ||
      candidate_ms.size() < o.slow_min_samples) {
    return false;
  }
  const double slowest_reference = *std::max_element(reference_ms.begin(), reference_ms.end());
  const double fastest_candidate = *std::min_element(candidate_ms.begin(), candidate_ms.end());
  return slowest_reference < o.slow_below * (fastest_candidate - o.slow_offset_ms);
}

TimingOutcome TimeInterleaved(const Program& reference, const Program& candidate,
                              const TimingOptions& o, const IterationHooks& hooks) {
  Sampler sampler(o);
  TimingOutcome out;
  const bool has_candidate = static_cast<bool>(candidate);
  uint32_t iteration = 0;  // warm-up and sampled pairs alike
  auto set_for = [&]() { return hooks.before ? hooks.before(iteration) : 0; };
  auto checked = [&]() {
    if (hooks.after && !hooks.after(iteration)) out.stopped_at = iteration;
    ++iteration;
    return out.stopped_at < 0;
  };
  for (int i = 0; i < o.warmup; ++i) {
    const int set = set_for();
    for (bool is_ref : {true, false}) {
      if (!is_ref && !has_candidate) continue;
      Sample s = sampler.Run(is_ref ? reference : candidate, set);
      // A program the trace cannot account for once warmed up is timed by the events, both
      // programs alike.
      if (s.event_fallback && i == o.warmup - 1) {
        const std::string whose = is_ref ? "reference's" : "candidate's";
        if (o.require_clock) {
          throw std::runtime_error(
              "kforge: the activity clock cannot account for the " + whose +
              " call (no GPU activity recorded, or device work the trace did not see)");
        }
        sampler.FallBackToEvents("the activity trace did not account for the " + whose +
                                 " warm-up call; timed by CUDA events");
      }
    }
    if (!checked()) return out;
  }
  out.clock = sampler.clock();
  auto start = Clock::now();
  bool cand_drained = false;  // the candidate's samples without the pre-roll (see below)
  bool converged = false;     // the stop rule, not a cap, ended the sampling
  SharedReference shared(o);
  for (uint32_t i = 0; i < o.max_samples; ++i) {
    const int set = set_for();
    bool ref_first = (i % 2) == 0;
    const bool time_ref = shared.TimesReference(i, out.ref.ms.size());
    for (int k = 0; k < 2; ++k) {
      bool is_ref = (k == 0) == ref_first;
      if (!is_ref && !has_candidate) continue;
      if (is_ref && !time_ref) {
        o.reference_untimed(set);  // its outputs, for the checks; the next sample drains first
        continue;
      }
      Sample s = sampler.Run(is_ref ? reference : candidate, set, is_ref || !cand_drained);
      if (s.event_fallback && !is_ref && !cand_drained && sampler.preroll_ms() > 0) {
        // The events do not see what ran beside the pre-roll: from the next iteration on the
        // candidate (not the reference) is timed drained. This sample is discarded (counted
        // as a fallback), not retaken: a second call on the same inputs could replay the
        // first's output.
        cand_drained = true;
        ++out.cand.event_fallbacks;
        sampler.AddNote("the candidate timed without the pre-roll after iteration " +
                        std::to_string(i) +
                        " (the activity trace did not account for a sample under it)");
        continue;
      }
      Add(s, is_ref, is_ref ? &out.ref : &out.cand);
    }
    if (!checked()) return out;
    const std::vector<double> ref_ms = shared.Pooled(out.ref.ms);
    // Whether a program has its minimum of samples (TimingOptions::short_min_samples).
    auto has_minimum = [&o](const std::vector<double>& ms) {
      const bool short_program =
          o.short_min_samples > o.min_samples && !ms.empty() && Median(ms) < o.short_below_ms;
      return ms.size() >= (short_program ? o.short_min_samples : o.min_samples);
    };
    bool enough = has_minimum(ref_ms) && PreciseEnough(ref_ms, o) && shared.EnoughNew(out.ref.ms) &&
                  (!has_candidate || (has_minimum(out.cand.ms) && PreciseEnough(out.cand.ms, o)));
    if (enough) {
      converged = true;
      break;
    }
    if (has_candidate && SlowEnough(ref_ms, out.cand.ms, o) && shared.EnoughNew(out.ref.ms)) {
      out.settled = out.slow = true;
      break;
    }
    if (o.settled && has_minimum(ref_ms) && shared.EnoughNew(out.ref.ms) &&
        (!has_candidate || has_minimum(out.cand.ms)) && o.settled()) {
      out.settled = true;
      break;
    }
    if (i >= 2 && Ms(Clock::now() - start) > o.time_cap_s * 1000) break;
  }
  if (out.ref.ms.size() < 3) {
    throw std::runtime_error(
        std::string("kforge: the ") +
        (o.clock == TimingClock::kReported ? "device clock could not time"
                                           : "activity trace could not account for") +
        " the reference's calls (" +
        std::to_string(out.ref.event_fallbacks) + " of " +
        std::to_string(out.ref.event_fallbacks + out.ref.ms.size()) + " samples)");
  }
  shared.Check(out.ref.ms);
  out.clock_note = sampler.clock_note();
  out.preroll_ms = sampler.preroll_ms();
  out.reference = Summarise(shared.Pooled(out.ref.ms));
  out.shared_reference_used = shared.used();
  out.shared_reference_ms = shared.samples();
  out.shared_reference_note = shared.note();
  out.candidate = Summarise(out.cand.ms);
  out.reference.set_event_fallbacks(out.ref.event_fallbacks);
  out.candidate.set_event_fallbacks(out.cand.event_fallbacks);
  out.reference.set_capped(!converged && !out.settled);
  out.reference.set_settled(out.settled);
  if (has_candidate) {
    out.candidate.set_capped(!converged && !out.settled);
    out.candidate.set_settled(out.settled);
  }
  if (o.cuda && has_candidate) {
    // The synchronisation's own cost is the same for both programs; a candidate that keeps the
    // device busy after its end event for much longer than the reference does left work
    // running on a stream the events did not see.
    double rg = Median(out.ref.tail_ms), cg = Median(out.cand.tail_ms);
    double cand_ms = out.candidate.median_ms();
    double allowance = std::max(0.1, 0.5 * cand_ms);
    if (cg > rg + allowance) {
      out.hidden_work = true;
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "the device stayed busy %.3f ms after the candidate's end event (reference: "
                    "%.3f ms); its samples measured %.3f ms",
                    cg, rg, cand_ms);
      out.hidden_work_detail = buf;
    }
  }
  return out;
}

struct DeviceClock::Impl {
  explicit Impl(const TimingOptions& options) : o(options), sampler(o) {}
  TimingOptions o;
  Sampler sampler;
};

DeviceClock::DeviceClock(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeviceClock::~DeviceClock() = default;

std::unique_ptr<DeviceClock> DeviceClock::Start(int device, uint64_t l2_bytes,
                                                std::string* why_not) {
  TimingOptions o;
  o.cuda = true;
  o.device = device;
  o.l2_bytes = l2_bytes;
  o.clock = TimingClock::kActivity;
  o.require_clock = true;  // no silent fall back to the events
  o.preroll_ms = 0.5;      // loads the pre-roll (a failure throws); each sample sets its own
  try {
    return std::unique_ptr<DeviceClock>(new DeviceClock(std::make_unique<Impl>(o)));
  } catch (const std::exception& e) {
    *why_not = e.what();
    return nullptr;
  }
}

double DeviceClock::trace_s() const { return impl_->sampler.trace_s(); }

DeviceClock::Reading DeviceClock::Sample(const std::function<void()>& p, double preroll_ms) {
  impl_->sampler.SetPrerollMs(preroll_ms);
  eval::Sample s = impl_->sampler.Run([&](int) { p(); }, 0, true);
  Reading r;
  r.late_host_ms = s.split.host_ms;
  if (s.steps_us.size() > 3) r.launch_ms = (s.steps_us[3] - s.steps_us[2]) / 1000;
  r.steps_us = std::move(s.steps_us);
  if (s.dropped) {
    r.why_not = "CUPTI dropped activity records during the call";
  } else if (!s.split.found && s.event_ms - s.split.host_ms > UnaccountedSlackMs(s.event_ms)) {
    // No record, yet the events saw the device busy longer than the host's call: device work
    // the trace did not see (not `no_work`).
    r.why_not = "the call's events saw " + std::to_string(s.event_ms) +
                " ms of device time and its activity trace no GPU work";
  } else if (!s.split.found) {
    r.why_not = kNoGpuActivity;
  } else if (s.event_fallback) {
    r.why_not = "the call's events saw device work its activity trace did not (" +
                std::to_string(s.event_ms) + " ms against a window of " +
                std::to_string(s.split.window_ms) + " ms)";
  } else {
    r.ok = true;
    r.span_ms = s.split.span_ms;
    r.busy_ms = s.split.busy_ms;
    r.work_ms = s.split.work_ms;
    r.queued = s.split.queued;
    for (uint32_t id : s.split.kernels) r.kernels.push_back(ActivityTrace::KernelName(id));
  }
  return r;
}

}  // namespace kforge::eval
