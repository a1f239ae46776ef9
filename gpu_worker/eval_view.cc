#include "gpu_worker/eval_view.h"

#include <sys/stat.h>

#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "common/base/subprocess.h"

namespace kforge {

std::vector<std::string> DefaultCompilerExecutables() {
  return {// The host compiler (c++ -> alternatives -> g++-N) and its back ends.
          "/usr/bin/c++", "/usr/bin/g++*", "/usr/bin/gcc*", "/usr/bin/cc", "/usr/bin/cpp*",
          "/usr/bin/x86_64-linux-gnu-*", "/usr/bin/aarch64-linux-gnu-*", "/usr/lib/gcc",
          "/usr/libexec/gcc", "/usr/bin/as", "/usr/bin/ld*",
          // load_inline's build: ninja runs each command through /bin/sh.
          "/usr/bin/ninja", "/bin/sh", "/usr/bin/dash",
          // nvcc and its tools (the links resolve to the toolkit's real directory).
          "/usr/local/cuda/bin", "/usr/local/cuda/nvvm/bin",
          // Triton's (torch.compile) lookup of libcuda: `ldconfig -p` (a script on Ubuntu).
          "/sbin/ldconfig*", "/usr/sbin/ldconfig*",
          // The dynamic loader, which the kernel runs for every dynamic executable.
          "/lib64/ld-linux*", "/lib/ld-linux*", "/usr/lib/x86_64-linux-gnu/ld-linux*",
          "/usr/lib/aarch64-linux-gnu/ld-linux*"};
}

std::string CudaToolkitDir() {
  const char* cuda_home = std::getenv("CUDA_HOME");
  return cuda_home && *cuda_home ? cuda_home : "/usr/local/cuda";
}

std::vector<std::string> CudaToolkitEnv() {
  struct stat st;
  const std::string cuda = CudaToolkitDir();
  if (stat(cuda.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return {};
  return {"CUDA_HOME=" + cuda};
}

absl::Status AddEnginePaths(const std::string& eval_binary, const std::string& cache_dir,
                            SandboxView* view, std::vector<std::string>* executables) {
  SpawnOptions spawn;
  spawn.argv = {eval_binary, "--sandbox-paths"};
  spawn.wall_limit_s = 60;
  SubprocessResult r = RunSubprocess(spawn);
  if (!r.Succeeded()) {
    return absl::FailedPreconditionError(eval_binary + " --sandbox-paths: " + r.Describe() +
                                         " " + r.error + r.stderr_data.substr(0, 500));
  }
  const bool restricted = !executables->empty();
  std::vector<std::string> lines = absl::StrSplit(r.stdout_data, '\n', absl::SkipEmpty());
  for (const std::string& line : lines) {
    view->read_only.push_back(line);
    if (restricted && absl::EndsWith(line, "/site-packages")) {
      executables->push_back(line + "/triton/backends/nvidia/bin");
      // Inductor points Triton at torch's own ptxas (TRITON_PTXAS_PATH) where torch ships one.
      executables->push_back(line + "/torch/bin/ptxas");
    }
  }
  view->read_only.push_back(eval_binary.substr(0, eval_binary.find_last_of('/')));
  const std::string cuda = CudaToolkitDir();
  view->read_only.push_back(cuda);
  if (restricted) {
    executables->push_back(cuda + "/bin");
    executables->push_back(cuda + "/nvvm/bin");
  }
  if (const char* extra = std::getenv("KFORGE_PYTHONPATH")) {
    std::vector<std::string> entries = absl::StrSplit(extra, ':', absl::SkipEmpty());
    view->read_only.insert(view->read_only.end(), entries.begin(), entries.end());
  }
  if (!cache_dir.empty()) view->read_write.push_back(cache_dir);
  // The node's MPS daemon (docs/operations.md, "MPS"): its clients connect to the control
  // socket there. Read-only: a candidate cannot remove or replace the sockets that other
  // evaluations connect to (connecting needs no write access to the mount). The children see
  // the whole directory, so it must be the daemon's own.
  if (const char* mps = std::getenv("CUDA_MPS_PIPE_DIRECTORY"); mps != nullptr && *mps != '\0') {
    std::string dir = mps;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    struct stat st;
    // What a view may hold at all (not /, /tmp, /dev...), and not the other shared ones.
    const bool shared =
        !CheckViewPath(dir).ok() || dir == "/run" || dir == "/var/run" || dir == "/var/tmp";
    if (shared || stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(
          "CUDA_MPS_PIPE_DIRECTORY=" + std::string(mps) +
          " must be an existing absolute directory of the MPS daemon's own (such as "
          "/run/kforge-mps/pipe, made before the daemon starts), not a shared one: the "
          "evaluations see all of it");
    }
    view->read_only.push_back(dir);
  }
  return absl::OkStatus();
}

}  // namespace kforge
