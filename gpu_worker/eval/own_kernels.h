// Which kernels a kernelbench-dialect candidate defines in its own text, and whether a kernel
// the GPU ran is one of them: the `fallback` rule's check that a candidate with kernels of its
// own launches one of them in each call (runtime_rules.h, UnlaunchedKernels).
//
// A policy over the candidate's text and its process's activity records, never a boundary:
// a candidate can name a kernel it does not define, and a native-code candidate can forge its
// records. What ran is judged and timed whatever this says.
//
// Pure functions, unit-tested without a GPU.
#ifndef KFORGE_GPU_WORKER_EVAL_OWN_KERNELS_H_
#define KFORGE_GPU_WORKER_EVAL_OWN_KERNELS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kforge::eval {

// The names of the kernels `source` defines, in order of first appearance, without repeats:
// the function after each `__global__` (CUDA C++ in a string: load_inline, cupy's RawKernel and
// RawModule, pycuda's SourceModule, NVRTC; not in a comment or on a `#` line) and each function
// decorated with `triton.jit` (or triton's autotune and heuristics above it) or numba's
// `cuda.jit`. Names that cannot be read (a macro's pasted name, an f-string placeholder) are
// left out, so a candidate may define more than this finds.
std::vector<std::string> DefinedKernelNames(const std::string& source);

// Whether `launched`, a kernel name as CUDA's activity records give it (mangled for C++
// linkage), is the kernel `defined`: the same name (extern "C", Triton; Triton before 3.0 adds
// `_0d1d...`), or a C++ name, demangled, that holds it as a whole identifier before its
// parameter list, template arguments or ABI tag (`_ZN12_GLOBAL__N_111relu_kernelEPf` is
// `(anonymous namespace)::relu_kernel(float*)`; torch's `at::native::tanh_kernel_cuda(...)` is
// not `tanh_kernel`).
bool IsOwnKernel(const std::string& launched, const std::string& defined);

// Whether any of `launched` is any of `defined`.
bool LaunchedOwnKernel(const std::vector<std::string>& launched,
                       const std::vector<std::string>& defined);

// Whether the rule holds a candidate to its kernels: its source defines some
// (`defined_kernels` of them, DefinedKernelNames) and it built them (`extensions_built`
// load_inline/load builds that succeeded, or a kernel library such as cupy that loaded,
// build_failures.h). A candidate whose kernels are never built for the task (behind a size
// threshold, a switch left off: CUDA-L1's 1_98 and 2_6) runs PyTorch honestly; one whose build
// failed is the failed-build rule's.
bool MustLaunchOwnKernels(size_t defined_kernels, uint32_t extensions_built,
                          bool kernel_library_loaded);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_OWN_KERNELS_H_
