// The runtime rules: checks on what a candidate did with its inputs and outputs, each with the
// stable rule id that becomes EvalResult.rule. The judge applies those that need only its own
// memory (inputs unchanged, poison left in outputs); the candidate process applies those that
// need the candidate's own tensors (outputs that alias its inputs, earlier outputs, host
// memory), and reports them as claims (docs/evaluation.md, "The trust boundary"). A rule that
// fires is a `Verdict` with its reason; `where` prefixes the reason ("" in the correctness
// trials, "in iteration N of the timing stage, " when timing).
//
// Pure functions over tensors; call from the thread that owns them.
#ifndef KFORGE_GPU_WORKER_EVAL_RUNTIME_RULES_H_
#define KFORGE_GPU_WORKER_EVAL_RUNTIME_RULES_H_

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <vector>

#include "kforge/v1/eval.pb.h"

namespace kforge::eval {

// A verdict reached by a stage or a rule.
struct Verdict {
  v1::Verdict verdict;
  std::string reason;
  std::string rule;
};

// True when some element of a floating-point output is exactly the poison pattern (all bits
// set), i.e. memory the candidate returned without writing. Computed NaNs are canonical
// (0x7fc0...), never all ones.
bool HoldsPoison(const at::Tensor& t);

// `stale_memory` when output `o` still holds the poison bytes.
std::optional<Verdict> StaleMemory(const at::Tensor& out, size_t o, const std::string& where);

// `returns_input` when a candidate output shares memory with one of its inputs where the
// reference's output does not share it with the reference's inputs (`ref_aliases(o, i)`).
std::optional<Verdict> ReturnsInput(const std::vector<bool>& ref_aliases, size_t num_inputs,
                                    const std::vector<at::Tensor>& cand_out,
                                    const std::vector<at::Tensor>& cand_in,
                                    const std::string& where);
// Bit i of the result's entry o: the reference's output o shares memory with its input i.
std::vector<uint64_t> AliasBits(const std::vector<at::Tensor>& ref_out,
                                const std::vector<at::Tensor>& ref_in);

// `host_memory` for output `o` in pinned host or managed memory tagged as CUDA: the host could
// write it with no kernel or copy the activity clock would see.
std::optional<Verdict> HostMemory(const at::Tensor& out, size_t o, const std::string& where);

// `output_cache` for output `o` when it is memory the candidate returned before (`earlier`,
// held alive so that a fresh allocation cannot land on it).
std::optional<Verdict> ReusedOutput(const at::Tensor& out, size_t o,
                                    const std::vector<at::Tensor>& earlier,
                                    const std::string& where);

// `input_mutation` when the candidate's copy of the inputs no longer equals the reference's
// after both ran (the candidate changed its own, or reached the reference's).
std::optional<Verdict> ChangedInput(const std::vector<at::Tensor>& ref_in,
                                    const std::vector<at::Tensor>& cand_in,
                                    const std::string& where);

// `no_work`: the candidate's process recorded no GPU work at all (no kernel, copy or memset) in
// `idle_calls` device-clock calls and in none of its others, while `reference_calls` of the
// reference's recorded some: its outputs were not computed from the call's inputs (kept from
// an earlier call, or made once: a task whose output does not depend on its inputs). Fires
// from kNoWorkCalls such calls on. The candidate's activity is read in its own process, so
// the rule is applied only where that process cannot reach native code (the caller checks).
inline constexpr uint32_t kNoWorkCalls = 8;
std::optional<Verdict> NoWork(uint32_t idle_calls, uint32_t busy_calls, uint32_t reference_calls,
                              const std::string& where);

// `fallback` for a failed build the candidate went on without: `failed` kernel builds
// (torch.utils.cpp_extension load/load_inline raised, or the candidate's import of a kernel
// library this machine lacks: cupy, pycuda) and none `built` in its process, and yet
// ModelNew was constructed (`where` "") or forward returned. What ran is PyTorch (or whatever
// the candidate's except chose), not a kernel of its own (issue 13, point 4: a hidden fallback
// decided at runtime). `first_failure` names the build and its first error line. A candidate
// that builds another extension after a failure (a second variant) is judged by its outputs.
// The counts are kept in the candidate's own process (build_failures.h): a policy on what
// it did, not a boundary; what ran is judged and timed whatever they say.
std::optional<Verdict> FailedBuild(uint32_t failed, uint32_t built,
                                   const std::string& first_failure, const std::string& where);

// `fallback` for a call of a candidate whose text defines kernels (`defined`, own_kernels.h)
// that launched none of them, only `launched` (issue 13, point 4: a candidate that made kernels
// of its own launches them in every call). It catches a fallback whose kernel library imported
// but failed later (cupy's compile or launch inside an `except`), which FailedBuild does not
// see. Read from the activity trace of the candidate's device-clock samples, in its own
// process: a policy, not a boundary.
std::optional<Verdict> UnlaunchedKernels(const std::vector<std::string>& defined,
                                         const std::vector<std::string>& launched,
                                         const std::string& where);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_RUNTIME_RULES_H_
