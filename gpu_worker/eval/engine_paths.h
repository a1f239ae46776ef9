// The host paths the engine reads at run time besides the system's: its Python packages (the
// torch it was built against), the cpp dialect's compiler and include directories, the CUDA
// headers NVRTC compiles against, and the directories of every shared library loaded in this
// process (LibTorch, CUDA, libpython). The worker's sandbox binds them read-only into its file
// view (gpu_worker/sandbox_view.h); `kforge-eval --sandbox-paths` prints them.
//
// Thread-safety: call from any thread.
#ifndef KFORGE_GPU_WORKER_EVAL_ENGINE_PATHS_H_
#define KFORGE_GPU_WORKER_EVAL_ENGINE_PATHS_H_

#include <string>
#include <vector>

namespace kforge::eval {

// Absolute paths, without duplicates; some may not exist on this machine.
std::vector<std::string> PathsTheEngineReads();

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_ENGINE_PATHS_H_
