// kforge.cuda: the NVRTC module that `nvrtc`-dialect candidates use from Python.
//
//   from kforge import cuda
//   mod = cuda.compile(SRC, options=["-O3"])      # raises cuda.CompileError with the log
//   mod.my_kernel(grid=(g,), block=(256,), shared_mem=0, args=(x, y, n))
//
// Kernels must be `extern "C"`. Tensors pass their device pointers; Python ints, floats and
// bools are converted to the size of the kernel's parameter (cuFuncGetParamInfo). Launches go
// on torch's current CUDA stream. Compiled cubins are cached on disk by content hash.
//
// The driver API is reached through cudaGetDriverEntryPointByVersion, so the engine starts on
// machines without a GPU driver (CPU mode): there NVRTC still compiles for the configured
// architecture, and a launch raises an error saying no GPU is available.
//
// Thread-safety: used from the Python thread holding the GIL; the launch counter is atomic.
#ifndef KFORGE_GPU_WORKER_EVAL_NVRTC_MODULE_H_
#define KFORGE_GPU_WORKER_EVAL_NVRTC_MODULE_H_

#include <cstdint>
#include <string>

namespace kforge::eval {

struct NvrtcConfig {
  std::string arch;       // "sm_90"
  bool gpu_available = false;
  int device_index = 0;
  std::string cache_dir;  // empty: no disk cache
};

// Sets the configuration used by later cuda.compile calls. Call before candidate code runs.
void ConfigureNvrtc(const NvrtcConfig& config);

// Kernel launches made through kforge.cuda since the process started.
uint64_t NvrtcLaunchCount();

// Statistics of cuda.compile calls: wall seconds spent and cache hits.
struct NvrtcCompileStats {
  int compiles = 0;
  int cache_hits = 0;
  double seconds = 0;
  std::string last_log;  // NVRTC's log of the most recent compile (bounded)
};
NvrtcCompileStats GetNvrtcCompileStats();

// Registers the `kforge` / `kforge.cuda` modules with the embedded interpreter. Must be called
// before the interpreter is initialised (pybind11 inittab).
void RegisterKforgePythonModule();

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_NVRTC_MODULE_H_
