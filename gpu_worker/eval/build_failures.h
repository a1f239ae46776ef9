// Extension builds in the candidate process: failed builds remembered in the candidate's cache
// namespace, and a build lock that dies with its process.
//
// Many released candidates call torch.utils.cpp_extension.load_inline (or load) inside a
// try/except and fall back to PyTorch when it fails, and the build fails the same way every time
// (a compile error is a property of the sources and flags). torch caches only successful
// builds, so each process runs the compiler again: 16-38 s of a GPU turn for candidates whose
// build ahead had already failed (session 11, docs/benchmarks.md). This wraps load_inline in
// the candidate process (not load: its sources are paths whose contents may change): a build
// that fails with torch's "Error building extension" and a compiler diagnostic on a source line
// ("x.cu(12): error", "main.cpp:5:3: error"; not a compiler killed, out of disk, memory or
// processes, or unable to run or read a file; no "native" among the arguments) leaves a marker
// (the message, at most 64 KiB) under $TORCH_EXTENSIONS_DIR/.kforge_failed_builds/, keyed by a
// hash of every argument (name, sources, functions, flags, include paths, with_cuda), torch's
// and CUDA's versions, CUDA_HOME (as set and resolved) and TORCH_CUDA_ARCH_LIST; a later call
// with the same key raises the same RuntimeError at once, so the candidate takes the path it
// took the first time.
// A replayed failure starts no compiler, so the audit hook sees no native code for it (none was
// built). With verbose=True torch prints the compiler's output instead of putting it in the
// exception, so such builds are never remembered.
//
// torch's own build lock (FileBaton) is a file whose existence is the lock: a build killed at
// the build limit leaves it, and every later load_inline of that extension in that namespace
// (the timed run after a killed build ahead, say) waits for it until its own limit. The
// replacement holds the same file with flock(2), released by the kernel when the process dies;
// a process that had to wait for it builds anyway (a no-op for ninja when the holder finished,
// the build when the holder died), where torch's waiter would load whatever was left.
//
// Every call of load_inline and load is also counted, built or failed (any exception out of
// it, a replayed failure included, except the transient ones above: a compiler killed or out
// of resources), with the first failure's build name and first error line:
// the runtime `fallback` rule (runtime_rules.h, FailedBuild) rejects a candidate that went on
// without its failed build. An ImportError from the candidate module's own absolute import of
// a kernel library (cupy, pycuda; an ImportError or any other exception) counts as a failed
// build too ("import cupy: No module
// named 'cupy'"): CUDA-L1's cupy candidates fall back to PyTorch on it. Counted in the candidate's
// process, so a policy on what it did: a candidate can hide a failure (call torch's internals, or
// build something else), and is then judged, like any other, by what ran. Before the rule fires the
// candidate process runs the counterfactual (ProbeFailedBuildsUsed): a failed kernel the candidate
// would not have used anyway is no fallback.
//
// An optimisation in the candidate's own (untrusted) process, not a defence: the candidate can
// undo it (it then compiles again, or waits on torch's lock) or plant markers (its own builds
// then fail: the namespace is its task's and its own, candidate_files.h). Nothing is remembered
// without TORCH_EXTENSIONS_DIR.
#ifndef KFORGE_GPU_WORKER_EVAL_BUILD_FAILURES_H_
#define KFORGE_GPU_WORKER_EVAL_BUILD_FAILURES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kforge::eval {

// Imports torch.utils.cpp_extension and wraps load_inline and load, and, with
// `kernel_libraries`, builtins.__import__ for the kernel libraries (every import statement of
// the process then runs a Python frame: only for sources that name one). Call once, before the
// audit hook and any candidate code, with the GIL held. Raises pybind11::error_already_set on
// failure.
void RememberFailedExtensionBuilds(bool kernel_libraries);

// The extension builds of this process so far (all zero when the wrappers are not installed).
struct ExtensionBuilds {
  uint32_t built = 0;
  uint32_t failed = 0;
  std::string first_failure;  // "load_inline('name'): first error line"
  // The candidate's own module imported a kernel library (cupy, pycuda) that loaded: its
  // kernels are compiled at run time, with no extension build to count.
  bool kernel_library = false;
};
const ExtensionBuilds& ExtensionBuildsSoFar();

// The counterfactual for a failed build: runs `fn` (which makes a second ModelNew from a fresh
// execution of the candidate's source, and calls it) with every load_inline/load call (or
// kernel library import) that fails returning a stand-in module instead of raising; true when the
// candidate touched a stand-in (read an attribute of it or called it), i.e. it would have used the
// kernel had it built. A candidate whose failed kernel is dead for this task (never reached for its
// shapes, behind another path that works) touches none. Exceptions from `fn` end the probe and are
// swallowed; torch's and Python's random states are restored after it (`cuda_devices`: the
// CUDA devices whose generators to restore). Requires RememberFailedExtensionBuilds().
bool ProbeFailedBuildsUsed(const std::function<void()>& fn, const std::vector<int>& cuda_devices);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_BUILD_FAILURES_H_
