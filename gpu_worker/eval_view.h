// What a sandboxed kforge-eval child sees and may run: the worker's part of issue 15's
// restricted view. The system paths come from the configuration (--sandbox_read_only_paths,
// defaults in sandbox_view.h); to them the worker adds what the engine itself reports it reads
// (`kforge-eval --sandbox-paths`: its Python packages, compiler, include directories and the
// directories of its shared libraries), the binary's own directory, the CUDA toolkit
// ($CUDA_HOME, else /usr/local/cuda), KFORGE_PYTHONPATH's entries, and the build cache
// (writable: the engine writes the shared PCH there, and the evaluation process narrows its own
// writes to its candidate's namespace with Landlock, gpu_worker/eval/candidate_files.h).
//
// Execution is limited to compilers and what they run (DefaultCompilerExecutables): g++ and
// its back ends, binutils, nvcc's tools, ninja and the /bin/sh it runs commands with,
// ldconfig (Triton asks it where libcuda is), and the dynamic loader; AddEnginePaths adds
// $CUDA_HOME's tools and Triton's bundled ones (ptxas) in the engine's site-packages.
// kforge-eval itself is the sandbox's argv[0] and always allowed.
//
// Thread-safety: call at start-up, from one thread.
#ifndef KFORGE_GPU_WORKER_EVAL_VIEW_H_
#define KFORGE_GPU_WORKER_EVAL_VIEW_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gpu_worker/sandbox_view.h"

namespace kforge {

std::vector<std::string> DefaultCompilerExecutables();

// The CUDA toolkit the children see and may run: $CUDA_HOME, else /usr/local/cuda.
std::string CudaToolkitDir();

// {"CUDA_HOME=<CudaToolkitDir()>"} when that directory exists, else nothing: for the children's
// environment, so that torch's cpp_extension runs the nvcc the view and the program list allow
// instead of the first nvcc on PATH (a wrapper script in /usr/local/bin on some machines, which
// the program list refuses: "Permission denied").
std::vector<std::string> CudaToolkitEnv();

// Adds to `view` the paths a kforge-eval child reads (asking `eval_binary`), $CUDA_MPS_PIPE_
// DIRECTORY where set (read-only) and `cache_dir` (writable), and to `executables`, unless it is
// empty (any program), the toolchains found there. FAILED_PRECONDITION when the binary cannot
// say.
absl::Status AddEnginePaths(const std::string& eval_binary, const std::string& cache_dir,
                            SandboxView* view, std::vector<std::string>* executables);

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_EVAL_VIEW_H_
