// The fork server's memory of each task's reference timings (docs/evaluation.md, "Sharing the
// reference"): a batch of candidates of one task should not pay for timing the reference again
// for each candidate.
//
// The server is trusted (no candidate code runs in it) and sees every request and result of its
// slot. Per task (SHA-256 of its source), timing settings (device, min_samples,
// max_rel_stderr, the device clock's starting pre-roll, the timing budget) and policy, and per
// clock it
// keeps the reference's samples from the last evaluation that timed the reference in full
// itself. Only the device clock's are shared by default: between processes the call clock's
// medians move by some 25 us (the host's speed in that process, the hop), the reference's and
// the candidate's together, which their ratio cancels only when both were measured in the same
// process (docs/evaluation.md, "Between processes"); `share_call` shares them too (the CPU
// tests, where the call clock is the only one). An entry serves at most kMaxUses evaluations
// within kMaxAgeS, then lapses, and the next evaluation measures the reference in full again
// and renews it (as does one whose judge dropped the shared samples for drift). The evaluation
// process (the judge) gets the samples in EvalRequest.shared_reference_* and still times the
// reference in some iterations, to drop the share if it drifted (timing.h,
// TimingOptions::shared_reference_ms).
// Outputs are never shared: the reference computes every iteration's outputs as before.
//
// Prepare clears whatever the client put in those fields (a tenant cannot hand the judge a
// reference of its choosing; kforge-eval's one-shot path clears them too). To learn the samples
// the server asks every evaluation for them (keep_samples) and Record drops them again from a
// result whose client did not ask.
//
// Thread-safety: none; the server is single-threaded.
#ifndef KFORGE_GPU_WORKER_EVAL_REFERENCE_SHARE_H_
#define KFORGE_GPU_WORKER_EVAL_REFERENCE_SHARE_H_

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "kforge/v1/eval.pb.h"

namespace kforge::eval {

// Clears a request's shared_reference_* fields.
void ClearSharedReference(v1::EvalRequest* request);

class ReferenceShares {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ReferenceShares(bool share_call = false) : share_call_(share_call) {}

  static constexpr double kMaxAgeS = 600;
  static constexpr int kMaxUses = 16;
  static constexpr size_t kMinSamples = 20;  // fewer: nothing shared
  static constexpr size_t kMaxEntries = 256;
  // A reference measurement is kept only below this relative standard error of its median.
  static constexpr double kMaxRelStderr = 0.01;

  // Before the request goes to its evaluation: clears its shared_reference_*, fills them from
  // fresh entries for its key (each counts a use), and sets keep_samples. Returns whether the
  // client had asked for the samples itself.
  bool Prepare(v1::EvalRequest* request, Clock::time_point now);

  // After: each shared clock whose reference this result timed in full itself (an ok result,
  // no shared samples, at least kMinSamples, not capped, its median's relative standard error
  // at most kMaxRelStderr) becomes that clock's entry; then, unless `client_keeps_samples`,
  // every sample is dropped from the result.
  void Record(const v1::EvalRequest& request, bool client_keeps_samples, v1::EvalResult* result,
              Clock::time_point now);

  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::vector<double> ms;
    Clock::time_point taken;
    int uses = 0;
  };
  // The request's key for one clock ("call" or "device").
  static std::string Key(const v1::EvalRequest& request, const char* clock);

  bool share_call_;
  std::map<std::string, Entry> entries_;
};

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_REFERENCE_SHARE_H_
