// What the tests of the worker with the real kforge-eval share: the checkout's files, and the
// options kforge-worker gives a sandboxed kforge-eval in CPU mode (its own user, namespaces, the
// view, the compilers as the only programs). Needs KFORGE_SOURCE_DIR and KFORGE_BINARY_DIR.
#ifndef KFORGE_GPU_WORKER_SANDBOXED_ENGINE_FOR_TESTS_H_
#define KFORGE_GPU_WORKER_SANDBOXED_ENGINE_FOR_TESTS_H_

#include <stdlib.h>
#include <sys/stat.h>

#include <string>

#include "absl/status/status.h"
#include "common/base/files.h"
#include "gpu_worker/eval_view.h"
#include "gpu_worker/worker_options.h"

namespace kforge {

// A file of the checkout, by its path there.
inline std::string Source(const std::string& rel) {
  return ReadFileOrEmpty(std::string(std::getenv("KFORGE_SOURCE_DIR")) + "/" + rel);
}

// Options for sandboxed CPU-mode evaluations whose scratch directories and build cache (made
// here, writable by the sandbox's user) lie under `dir`.
inline absl::Status SandboxedCpuOptions(const std::string& dir, WorkerOptions* options) {
  options->eval_binary =
      std::string(std::getenv("KFORGE_BINARY_DIR")) + "/gpu_worker/eval/kforge-eval";
  options->cache_dir = dir + "/cache";
  if (mkdir(options->cache_dir.c_str(), 0777) != 0) {
    return absl::InternalError("cannot make " + options->cache_dir);
  }
  chmod(options->cache_dir.c_str(), 01777);
  options->scratch_root = dir;
  options->cpu_mode = true;
  options->require_namespaces = true;
  options->sandbox_executables = DefaultCompilerExecutables();
  return AddEnginePaths(options->eval_binary, options->cache_dir, &options->sandbox_view,
                        &options->sandbox_executables);
}

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_SANDBOXED_ENGINE_FOR_TESTS_H_
