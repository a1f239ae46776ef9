// Where a judge-to-candidate call's time goes, for diagnosing the call clock's hop (0.33 ms a
// null call on the H200, 0.03-0.07 ms in CPU mode). Off unless KFORGE_CALL_PROFILE is set in
// the evaluation's environment; then the candidate process stamps each call's steps and the
// judge prints, at the end of the evaluation, one line per kind of call to stderr, which
// reaches the result's output_log. The kinds: `null` (the calibration's null calls), `traced`
// (activity-traced calls: correctness trials of candidates with kernels of their own and the
// device clock's samples, whose forward holds the pre-roll and CUPTI's work) and `call` (the
// rest: untraced trials and the call clock's samples, whose round trip holds the hop):
//   kforge-call-profile {"kind": "null", "calls": 33, "send_us": ..., "roundtrip_us": ...,
//                        "candidate_us": {"args": ..., ...}, "outside_candidate_us": ...}
// Each number is a median over the calls of that kind. And one line for the reference's
// call-clock samples in the judge (since session 20: the judge's reference calls read
// 0.05-0.23 ms longer than a bare script's, and moved between processes):
//   kforge-call-profile {"kind": "reference", "calls": 40, "judge_us": {"forward": ...,
//                        "slots": ...}}
// and (since session 33: the device clock's phase cost ~6 ms per kept sample, warm-ups, samples
// left out, inputs and checks included, where a sample's pre-roll and forward take ~1.6) one for
// the reference's device-clock samples, each step's stamp (kDeviceSampleSteps):
//   kforge-call-profile {"kind": "reference_device", "samples": 52, "judge_us": {"drain": ...,
//                        "discard": ..., ..., "collect": ...}}
// where `forward` is the host's time until the reference's forward returned (its dispatch)
// and `slots` until its outputs' copies into slot-shaped buffers and out again were queued;
// the sample (reference_call) adds the synchronisation after them. A benchmark's tool, not a
// result: the candidate's stamps come from the candidate's process.
#ifndef KFORGE_GPU_WORKER_EVAL_CALL_PROFILE_H_
#define KFORGE_GPU_WORKER_EVAL_CALL_PROFILE_H_

#include <string>
#include <vector>

namespace kforge::eval {

bool CallProfileOn();

// The candidate process's steps of a call, in order; each stamp is the time from the call's
// start to the step's end, in microseconds.
inline constexpr const char* kCallSteps[] = {"args",  "forward", "sync",
                                             "rules", "copy",    "sync2"};

// The steps of a device-clock sample in the judge (timing.cc's sampler): the device drained,
// CUPTI's records of what ran since the last sample discarded, the pre-roll launched and
// resident, the program's call between its two events launched, the end event reached, the
// device drained again (other streams), the sample's records collected.
inline constexpr const char* kDeviceSampleSteps[] = {"drain", "discard", "preroll", "launch",
                                                     "wait",  "drain2",  "collect"};

enum class CallKind { kNull, kTraced, kCall };

class CallProfile {
 public:
  // One call: the judge's time to build and send it, from its start to the answer's arrival,
  // and the candidate's stamps (fewer than kCallSteps when the call ended early).
  void Add(CallKind kind, double send_us, double roundtrip_us, std::vector<double> stamps_us);
  // One call-clock sample of the reference: host microseconds from its start until the
  // forward returned and until the slot copies were queued.
  void AddReference(double forward_us, double slots_us);
  // One device-clock sample of the reference in the judge: its steps' stamps
  // (kDeviceSampleSteps, microseconds from the sample's start).
  void AddReferenceDevice(const std::vector<double>& stamps_us);
  // The lines described above, "" when no call was added.
  std::string Summary() const;

 private:
  struct Calls {
    std::vector<double> send, roundtrip, outside;
    std::vector<std::vector<double>> steps;  // per step, over the calls that reached it
  };
  static std::string Line(const char* kind, const Calls& c);
  Calls null_, traced_, calls_;
  std::vector<double> ref_forward_, ref_slots_;
  std::vector<std::vector<double>> ref_device_;  // per step, over the samples that reached it
};

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_CALL_PROFILE_H_
