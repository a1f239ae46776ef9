// The candidate process: the only process of an evaluation where candidate code runs. The
// judge (engine.cc) forks it before either initialises CUDA, so it has a CUDA context of its
// own, and talks to it over a socketpair (channel.h, messages in proto/kforge/v1/judge.proto).
//
// What it does, in order: locks itself down (candidate_lockdown.h; its writes are already
// confined to the candidate's cache namespace, candidate_files.h), then serves the judge: Load builds the
// candidate (both models on the CPU after the same init seed, as KernelBench's harness does,
// then ModelNew moved to the device with the reference's parameters and buffers copied in);
// Slot maps memory the judge shares; Call runs forward on inputs in slots, applies the runtime
// rules that need its own tensors, copies the outputs into the judge's output slots and
// synchronises its device before it answers. It exits when the judge closes the channel.
//
// Everything it answers is a claim: the judge decides the verdict from the slots' contents
// and the time from its own clock (docs/evaluation.md, "The trust boundary").
//
// Thread-safety: the process's main thread, with the GIL.
#ifndef KFORGE_GPU_WORKER_EVAL_CANDIDATE_PROCESS_H_
#define KFORGE_GPU_WORKER_EVAL_CANDIDATE_PROCESS_H_

#include <string>

namespace kforge::eval {

// Runs the candidate process on `channel_fd` and never returns (it _exits). Called in the child
// right after the judge's fork: the write lock (candidate_files.h) is inherited from the judge,
// which applied it before forking.
// `taint_fd`: the write end of the taint pipe (audit_hook.h).
[[noreturn]] void RunCandidateProcess(int channel_fd, int taint_fd);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_CANDIDATE_PROCESS_H_
