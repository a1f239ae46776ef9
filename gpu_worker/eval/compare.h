// Output comparison: the candidate's outputs against the reference's, in C++ so that
// candidate code cannot patch it.
//
// Checks, in order: same number of outputs; same shape, dtype; no NaN/Inf where the reference
// has none, and the same NaN/Inf where it has them; elementwise
// |c - r| <= atol + rtol * |r|; and the whole-output relative error ||c - r|| / ||r|| below a
// bound, so that near-zero outputs cannot be faked with zeros. All of it in float64, in one
// pass over both outputs (compare_element.h): by a kernel on the GPU for outputs of 2^20
// elements or more, on the host otherwise. The kernel is compiled with NVRTC once per process
// and element type (about 0.1 s) the first time a large output of that type is compared, unless
// the process was forked from one that prepared it (PrepareCompareKernels).
//
// Thread-safety: call from one thread (the kernel module is loaded once per process).
#ifndef KFORGE_GPU_WORKER_EVAL_COMPARE_H_
#define KFORGE_GPU_WORKER_EVAL_COMPARE_H_

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace kforge::eval {

struct Tolerance {
  double atol = 1e-4;
  double rtol = 1e-4;
  double whole_rel = 1e-2;  // bound on ||c - r|| / ||r||
};

// Defaults by dtype: fp32 1e-4, fp16/bf16 1e-2 (KernelBench's), whole-output bound
// min(0.05, 100 * rtol).
Tolerance DefaultTolerance(at::ScalarType dtype, double atol_override, double rtol_override);

struct Comparison {
  bool ok = true;
  std::string reason;        // why not, naming the output index
  double max_abs_error = 0;
  double max_rel_error = 0;
  double whole_rel_error = 0;
};

Comparison CompareOutputs(const std::vector<at::Tensor>& ref, const std::vector<at::Tensor>& cand,
                          const Tolerance& tol);

// The CUDA source of the comparison kernel `kforge_compare` for outputs of `type` (exposed for
// tests: it must compile with NVRTC). Throws std::invalid_argument for a type compared as
// float64 (complex types as pairs of reals).
std::string CompareKernelSource(at::ScalarType type);

// Compiles the comparison kernels of the usual output types (float32, float64, float16,
// bfloat16) with NVRTC for each architecture of `torch_arch_list` (TORCH_CUDA_ARCH_LIST's
// form: "9.0", "8.0;9.0+PTX") and keeps them in this process's memory. A process forked from
// this one then loads them instead of compiling its own (about 0.1 s an evaluation): the fork
// server calls it at its start, before any request (serve.h). Needs no GPU and no CUDA
// context; NVRTC runs in a child process that exits, so that nothing of it is in the process
// the evaluations are forked from. Never from a file: the cubin cache is writable by candidates,
// and a planted kernel would decide correctness. Returns how many kernels it compiled; one that
// fails to compile is left to be compiled when it is needed.
int PrepareCompareKernels(const std::string& torch_arch_list);

// Whether PrepareCompareKernels kept the kernel for `arch` ("sm_90") and `type`, and that
// kernel's cubin ("" when none).
bool HasPreparedCompareKernel(const std::string& arch, at::ScalarType type);
std::string PreparedCompareKernel(const std::string& arch, at::ScalarType type);

// True when the two tensors' storages overlap (an output aliasing an input).
bool SharesMemory(const at::Tensor& a, const at::Tensor& b);

// False for a CUDA tensor whose memory is not device memory (cudaMalloc, torch's caching
// allocator) but pinned host or managed memory tagged as CUDA, which the host can write with no
// kernel or copy; true for other tensors and empty ones.
bool InDeviceMemory(const at::Tensor& t);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_COMPARE_H_
