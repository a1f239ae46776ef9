// The embedded CPython interpreter with torch importable and the `kforge` module (kforge.cuda)
// registered.
//
// sys.path gets KFORGE_PYTHONPATH (colon-separated, from the environment) and then the
// site-packages of the Python the engine was built against, so the same torch that LibTorch
// came from is imported.
//
// Thread-safety: one interpreter per process, created and used by the main thread.
#ifndef KFORGE_GPU_WORKER_EVAL_PYTHON_RUNTIME_H_
#define KFORGE_GPU_WORKER_EVAL_PYTHON_RUNTIME_H_

#include <pybind11/embed.h>

#include <memory>
#include <string>
#include <vector>

namespace kforge::eval {

// Starts the interpreter and imports torch. On failure returns null and sets `error`.
std::unique_ptr<pybind11::scoped_interpreter> StartPython(std::string* error);

// EvalRequest.numerics: torch's defaults (cuDNN may use TF32) or, by default, fp32 convolutions
// in fp32. The interpreter must be running (StartPython sets fp32); a forked candidate process
// inherits the setting.
void SetTorchNumerics(bool torch_defaults);

// Formats the active Python exception (type, message, last traceback lines) for a reason.
// The modules a fork server imports once for its evaluations, comma-separated
// (KFORGE_WARM_IMPORTS overrides; empty: none): torch.compile's, which otherwise take 1.5-3 s to
// import in every evaluation of a candidate that compiles.
inline constexpr char kWarmImports[] = "torch._dynamo,torch._inductor.compile_fx";

// Imports `modules` (comma-separated) with TMPDIR, HOME and the cwd set to `dir`, then puts
// them back. Modules that keep a path derived from those at import (Inductor's cache and
// precompiled-header directories, Dynamo's debug directory, Triton's home) keep one under
// `dir`, which the fork server makes each request's own. Imports nothing that initialises CUDA
// (the server forks): false with `error` set where CUDA was initialised all the same, or the
// directories could not be switched. A module that fails to import is left to the evaluations
// (one line each in `warnings`).
bool WarmImports(const std::string& modules, const std::string& dir,
                 std::vector<std::string>* warnings, std::string* error);

std::string DescribePythonError(const pybind11::error_already_set& e, size_t max_bytes = 4000);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_PYTHON_RUNTIME_H_
