// The judge's handle on its candidate process (candidate_process.h): starts it, sends it the
// candidate to build, shares each call's inputs and output slots with it (shared_slots.h) and
// reads its answers as untrusted claims. The judge never maps memory the candidate process
// allocated: the candidate's outputs are in the judge's own slots, which the judge poisons
// before each call and copies out of afterwards.
//
// Thread-safety: the judge's main thread. Ownership: owns the child (killed and reaped by the
// destructor, or killed by KillWithoutWaiting and left to the supervisor) and the slots.
#ifndef KFORGE_GPU_WORKER_EVAL_CANDIDATE_CLIENT_H_
#define KFORGE_GPU_WORKER_EVAL_CANDIDATE_CLIENT_H_

#include <ATen/ATen.h>
#include <pybind11/pybind11.h>
#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpu_worker/eval/call_profile.h"
#include "gpu_worker/eval/channel.h"
#include "gpu_worker/eval/shared_slots.h"
#include "kforge/v1/judge.pb.h"

namespace kforge::eval {

class CandidateClient {
 public:
  // Forks the candidate process (which runs RunCandidateProcess). Call before this process
  // initialises CUDA, while it is single-threaded. Null with `error` when it cannot fork.
  static std::unique_ptr<CandidateClient> Start(std::string* error);
  ~CandidateClient();
  CandidateClient(const CandidateClient&) = delete;
  CandidateClient& operator=(const CandidateClient&) = delete;

  // Sends Load; the answer may come much later (the build), from Loaded().
  bool SendLoad(const v1::judge::Load& load, std::string* error);
  bool Loaded(v1::judge::Loaded* loaded, std::string* error);

  // Load.calibrate: waits until the candidate process is ready for null calls, and tells it
  // when they are over.
  bool AwaitCalibration(std::string* error);
  bool EndCalibration(std::string* error);

  // From here on slots are device memory of `device` (or CPU memory).
  void UseDevice(bool cuda, int device);

  // Copies `inputs` (the task's arguments, tensors on the judge's device) into the input slots
  // of `group`, before the reference runs on its own copy (which it may change).
  bool Prepare(int group, const pybind11::list& inputs, std::string* error);
  // Lays the output slots out like `ref_outputs` and fills them with the poison pattern (an
  // element the candidate does not write reads as all-ones bits, a NaN), then waits for the
  // device: outside any timed region.
  bool PoisonOutputs(const std::vector<at::Tensor>& ref_outputs, std::string* error);
  // One forward call on the inputs prepared for `group`; the candidate process fills the
  // output slots laid out by the last PoisonOutputs. False with `error` when the channel or
  // the process failed (not when the candidate did: that is in `called`).
  // `keep`: how many earlier calls' outputs the candidate process checks against;
  // `device_preroll_ms` > 0: a device-clock sample (judge.proto, Call.device_preroll_ms).
  bool Call(uint32_t iteration, int group, const std::vector<uint64_t>& ref_aliases, bool timed,
            uint32_t keep, double device_preroll_ms, v1::judge::Called* called,
            std::string* error, bool null_call = false);
  // KFORGE_CALL_PROFILE: call_profile.h's summary of the calls so far ("" when off or none).
  std::string CallProfileSummary() const { return profile_.Summary(); }
  // The candidate's copies of the inputs of `group` (views of its slots).
  const std::vector<at::Tensor>& inputs(int group) const { return input_views_.at(group); }
  // Views of the output slots (the candidate's outputs after a Call).
  const std::vector<at::Tensor>& outputs() const { return output_views_; }

  // Whether the candidate process reached native code (audit_hook.h), with the first such
  // event in `detail`; once true, always true.
  bool NativeCode(std::string* detail);
  // The judge's own finding that the process can reach native code (candidate_files.h,
  // HostCodeIn); the first finding, the hook's or this, is the one kept.
  void MarkNativeCode(const std::string& detail);

  // Why the channel failed, with how the process ended when it did.
  std::string Describe(const std::string& channel_error);

  // Sends the candidate process SIGKILL and forgets it: whoever reaps this process's orphans
  // (the supervisor, a child subreaper) reaps it. For the end of an evaluation, so that its
  // CUDA context is torn down while the answer goes out.
  void KillWithoutWaiting();

  // Once every process of the candidate is gone (the reference alone, engine.cc): what its
  // audit channel still holds is read (native code, as ever), and the channel is closed, so
  // that its end is not taken for the process closing it.
  void EndAuditChannel();

 private:
  // One read of the audit channel (audit_hook.h): bytes there are native code, and so is its
  // end where `end_is_native` (not once every process of the candidate was ended here).
  void ReadAuditChannel(bool end_is_native);
  CandidateClient(pid_t pid, int fd, int taint_fd)
      : pid_(pid), taint_fd_(taint_fd), channel_(fd, kMaxFrame) {}
  static constexpr size_t kMaxFrame = 1 << 20;  // answers are small; larger ones are refused

  // A slot of at least `bytes` for `key` (declared to the candidate process when new).
  bool SlotFor(const std::pair<int, int>& key, uint64_t bytes, uint32_t* slot,
               std::string* error);
  bool Receive(v1::judge::FromCandidate* in, std::string* error);

  pid_t pid_;
  int taint_fd_;
  bool native_code_ = false;
  std::string native_detail_;
  Channel channel_;
  std::unique_ptr<SlotArena> arena_;
  std::map<std::pair<int, int>, uint32_t> slots_;  // (group or -1 for outputs, index) -> slot
  std::map<int, std::vector<at::Tensor>> input_views_;
  std::map<int, std::vector<v1::judge::Arg>> prepared_;
  std::vector<at::Tensor> output_views_;
  std::vector<v1::judge::TensorView> output_descs_;
  CallProfile profile_;  // KFORGE_CALL_PROFILE only
};

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_CANDIDATE_CLIENT_H_
