// The `cpp` candidate dialect: one C++ file (contract in include/kforge/candidate.h) compiled
// by the host compiler into a shared object, loaded into the engine's process and called with
// at::Tensor inputs; its kernels are compiled by NVRTC and launched through the driver API on
// torch's current stream.
//
// Building: the source goes to <objects_dir>/<key>/candidate.cpp (objects_dir defaults to
// <cache_dir>/cpp), key = SHA-256 of the source, the compiler flags, the torch version and the candidate header. A precompiled
// header of <kforge/candidate.h> and <ATen/ATen.h> is built once per cache directory (and
// torch version and flags), and every compile includes it with -Werror=invalid-pch: a stale
// PCH fails the compile, is rebuilt, and the compile is retried once. The compiler runs as a
// child process with a wall-clock limit, its output captured with a bound. A shared object
// already in the cache is loaded without running the compiler.
//
// The shared object is linked without LibTorch: its undefined symbols bind at dlopen to the
// libraries the engine's process has loaded, so a missing `forward` or an unknown function is
// reported when it loads (a compile error all the same). Before it loads, its imports are
// checked (cpp_imports.h): LibTorch's libc10 and libtorch_cpu and the C/C++ runtime only.
//
// Failures a candidate can cause (compiler or linker errors, a missing `forward`, NVRTC
// errors, exceptions in init/forward, launches without a GPU) come back as values with the
// message; nothing here throws for them.
//
// Thread-safety: build and call candidates from one thread (the engine's main thread). The
// statistics are process-wide. Ownership: a CppCandidate owns its NVRTC module; the shared
// object stays loaded for the life of the process (candidates may leave static state or
// thread-local destructors behind).
#ifndef KFORGE_GPU_WORKER_EVAL_CPP_DIALECT_H_
#define KFORGE_GPU_WORKER_EVAL_CPP_DIALECT_H_

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kforge::eval {

// The host toolchain. DefaultCppToolchain() describes the one kforge-eval was built with: its
// C++ compiler and the torch wheel it links (include dirs without the wheel's google/).
struct CppToolchain {
  std::string cxx;
  std::vector<std::string> include_dirs;
  std::string torch_version;
  double compile_timeout_s = 100;  // per compiler run (the PCH build takes the longest)
  size_t max_log_bytes = 16 << 10;
};
CppToolchain DefaultCppToolchain();

struct CppBuildConfig {
  // Sources, shared objects, the PCH and NVRTC cubins. Empty: $HOME/.cache/kforge, or a fresh
  // temporary directory without HOME.
  std::string cache_dir;
  // Where this candidate's shared objects and its kernels' cubins are cached. Empty:
  // <cache_dir>/cpp and <cache_dir>. The engine points them into the candidate's own cache
  // namespace (candidate_files.h), the only cache it may write once candidate code can run.
  std::string objects_dir;
  std::string nvrtc_cache_dir;
  std::string arch = "sm_90";  // NVRTC target; kernels compile for it even without a GPU
  bool gpu_available = false;  // false: CPU mode, ctx.launch fails with a "no GPU" error
  int device_index = 0;
  CppToolchain toolchain = DefaultCppToolchain();
};

// Outcome of a call into the candidate.
struct CppCallStatus {
  std::string error;    // empty: success; else the exception's message
  bool no_gpu = false;  // the candidate tried to launch a kernel in CPU mode
  bool ok() const { return error.empty(); }
};

class CppCandidate {
 public:
  struct Impl;
  explicit CppCandidate(std::unique_ptr<Impl> impl);
  ~CppCandidate();
  CppCandidate(const CppCandidate&) = delete;
  CppCandidate& operator=(const CppCandidate&) = delete;

  // Untimed one-off setup with the reference's parameters and buffers in state_dict order.
  // A candidate without init succeeds at once.
  CppCallStatus Init(const std::vector<at::Tensor>& params);
  // The candidate's forward. `outputs` is replaced.
  CppCallStatus Forward(const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>* outputs);

  // Successful ctx.launch calls so far (fallback detection compares it around a forward).
  uint64_t launches() const;
  bool has_kernels() const;  // it declared KFORGE_KERNELS
  bool has_init() const;

 private:
  std::unique_ptr<Impl> impl_;
};

struct CppBuildResult {
  std::unique_ptr<CppCandidate> candidate;  // null on failure
  // On failure: true when the candidate is at fault (compiler, linker or NVRTC error, compiler
  // time limit, a shared object that does not load); false for the engine's own failures.
  bool compile_error = false;
  std::string error;       // on failure: what went wrong, with the relevant log
  std::string log;         // host compiler and NVRTC output (bounded), warnings included
  bool cache_hit = false;  // the shared object came from the cache: no compiler ran
  double seconds = 0;
  // Parts of `seconds`: the host compiler (with the PCH when it was built, about 0 on a cache
  // hit), NVRTC for the kernels, and dlopen plus loading the kernels' module.
  double host_compile_s = 0;
  double kernel_compile_s = 0;
  double load_s = 0;
};

CppBuildResult BuildCppCandidate(const std::string& source, const CppBuildConfig& config);

// Builds the precompiled header BuildCppCandidate would use, unless it exists. The engine
// calls it before it restricts its own writes, because the PCH is shared by every candidate
// of a cache directory and no candidate may write it. Returns an error, empty on success.
std::string PrepareCppPch(const CppBuildConfig& config);

// Process-wide counters of BuildCppCandidate.
struct CppBuildStats {
  int compiler_runs = 0;  // candidate compiles (not counting PCH builds)
  int pch_builds = 0;
  int cache_hits = 0;  // shared objects loaded from the cache
  double compile_s = 0;
  double pch_s = 0;
};
CppBuildStats GetCppBuildStats();

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_CPP_DIALECT_H_
