// What one timed call did on the GPU, from CUPTI's activity records: every kernel, copy and
// memset on any stream, and the host API call that launched each.
//
// The timing stage (timing.cc) marks the host clock right before it records the start event
// and calls a program, and right after the call returns and the end event is recorded; once
// the device is idle again it asks for the call's split:
//
//   pre   host time from the mark to the first API call that put work on the GPU
//   lat   that call to the start of the first GPU activity (submission latency)
//   span  the first GPU activity's start to the last one's end, over every stream, copy engine
//         and memset (what the timing stage counts)
//   post  host time from the last activity's end to the call's return, when the host was
//         still busy then
//   host  the call's host time from the later of the mark and the end of the GPU work
//         launched before it (the timer's flush or pre-roll) to its return
//
// API and GPU records share one clock (CUPTI normalises GPU timestamps to the host's), so
// `pre` and `span` are each read on a single clock. CUPTI comes from the libcupti the torch
// wheel already loads (libtorch_cpu needs it), opened with dlopen so that kforge-eval also
// starts where there is none (CPU mode).
//
// One process-wide instance: CUPTI's activity API has a single set of buffer callbacks.
// Thread-safety: CUPTI may deliver buffers on its own thread; records are guarded by a mutex.
// Mark and Collect are called from the timing thread only.
#ifndef KFORGE_GPU_WORKER_EVAL_ACTIVITY_TRACE_H_
#define KFORGE_GPU_WORKER_EVAL_ACTIVITY_TRACE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kforge::eval {

// One record: a GPU activity (kernel, copy, memset) or an API call, on CUPTI's clock (ns).
struct ActivityRecord {
  enum Kind : uint8_t { kGpu, kApi };
  Kind kind = kGpu;
  uint64_t start = 0;
  uint64_t end = 0;
  uint32_t correlation = 0;  // links a GPU activity to the API call that launched it
  uint32_t kernel = 0;       // a kernel's name (ActivityTrace::KernelName); 0: not a kernel
  // An API call that makes a stream wait for the host or run host code in stream order, which
  // puts no kernel, copy or memset in the records (cuLaunchHostFunc, cuStreamAddCallback,
  // cuStreamWaitValue*, cuStreamWriteValue*, cuStreamBatchMemOp), or launches a CUDA graph
  // (whose host nodes were built before the trace began).
  bool host_ordered = false;
};

// The longest idle gap between a call's activities that CallSplit::work_ms leaves out, and the
// most it leaves out of one call. On the H200 the span of a queued eager forward of a few
// kernels was 2.6-9 us longer than a CUDA graph replay of it, all gaps together (session 23,
// call 1): about 1-2 us a gap. Not yet measured gap by gap.
inline constexpr uint64_t kMaxFrontEndGapNs = 4000;
inline constexpr uint64_t kMaxFrontEndGapsNs = 20000;

struct CallSplit {
  bool found = false;  // false: no GPU activity was recorded for the call
  double pre_ms = 0, lat_ms = 0, span_ms = 0, post_ms = 0;
  // The call's GPU activities merged on one time line (overlaps once): the span less the
  // GPU's idle gaps between them, such as a kernel waiting for its predecessor's launch
  // latency. What a CUDA graph replay of the same work would leave of the span.
  double busy_ms = 0;
  // The span less the idle gaps of at most kMaxFrontEndGapNs between the call's activities,
  // those the GPU's front end leaves between queued kernels, up to kMaxFrontEndGapsNs in all.
  // A longer gap counts, whatever it waited for (a stream wait on a value the host writes, a
  // host function: calls that put no kernel, copy or memset on the GPU).
  double work_ms = 0;
  // The timer's own work is exactly one activity (the pre-roll: nothing else, such as a copy
  // another thread launched before the mark, ran beside it); every activity of the call has its
  // launching API call in the records; the call's first activity began no earlier than the
  // pre-roll ended; the last launching call had returned before that first activity began; and
  // no API call in the records makes a stream wait for the host or run host code, or launches
  // a graph (ActivityRecord::host_ordered). Then the host launched the whole call while the
  // pre-roll held the GPU, and none of the call's work ran beside it (a copy on a side stream
  // would open a gap the host could fill). Only then is `work_ms` the call's device time;
  // otherwise a gap may be host time the call needed, and the span is.
  bool queued = false;
  double host_ms = 0;  // set even when nothing was found
  int gpu_activities = 0;
  // From the later of the mark and the end of the timer's own work (flush, pre-roll: when the
  // start event fires) to the later of the last activity's end and the return. The events'
  // interval should not exceed it by more than the events' own latencies.
  double window_ms = 0;
  // The names of the call's kernels (ActivityRecord::kernel), each once, in order of start.
  std::vector<uint32_t> kernels;
};

// The split of one call whose records are `records` (any order), the call having begun at
// host time `mark` and returned at `ret`. GPU activities launched by an API call that started
// before `mark` (the timing stage's own flush and pre-roll), or without a recorded API call and
// already running at `mark`, or ended before it, are left out; other GPU activities without a
// recorded API call count as the call's, and the time from the mark to the first of them is
// all `pre`. Pure function, so it is unit-tested without a GPU.
CallSplit SplitCall(const std::vector<ActivityRecord>& records, uint64_t mark, uint64_t ret);

class ActivityTrace {
 public:
  // Loads CUPTI and enables kernel, copy, memset, runtime and driver API records (the API
  // records tell the timer's own launches from the call's). Returns null and sets `why_not`
  // when CUPTI cannot be loaded or enabled (another subscriber, no library, a library whose
  // API version differs from the headers': its records could be laid out differently).
  static std::unique_ptr<ActivityTrace> Start(std::string* why_not);
  ~ActivityTrace();  // disables the records and frees the buffers
  ActivityTrace(const ActivityTrace&) = delete;
  ActivityTrace& operator=(const ActivityTrace&) = delete;

  // The current time on CUPTI's clock (ns).
  uint64_t Now() const;
  // Delivers every completed record (call it after the device is synchronised) and splits the
  // records gathered since the previous Collect as one call from `mark` to `ret`. `dropped`
  // is set when CUPTI dropped records since then (the split is then unreliable).
  CallSplit Collect(uint64_t mark, uint64_t ret, bool* dropped);
  // Delivers and forgets every completed record, and the dropped flag (call it after the
  // device is synchronised, before the next call's mark).
  void Discard();
  // The name of kernel `id` as CUDA gives it (mangled for C++ linkage); "" for an unknown id.
  static std::string KernelName(uint32_t id);

 private:
  ActivityTrace() = default;
};

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_ACTIVITY_TRACE_H_
