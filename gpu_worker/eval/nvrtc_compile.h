// Compiles CUDA C++ to a cubin with NVRTC for a named architecture, with an on-disk cache keyed
// by the SHA-256 of the source, the options and the NVRTC version (<cache_dir>/<key>.cubin; the
// engine passes the candidate's own namespace, candidate_files.h). Needs no GPU or driver: CPU
// mode uses it to report compile errors.
//
// Both dialects (kforge.cuda in nvrtc_module.cc, KFORGE_KERNELS in cpp_dialect.cc) compile
// through this one function.
//
// Thread-safety: safe to call from several threads (no shared state; the cache is written
// through a rename, so concurrent writers of one key are harmless).
#ifndef KFORGE_GPU_WORKER_EVAL_NVRTC_COMPILE_H_
#define KFORGE_GPU_WORKER_EVAL_NVRTC_COMPILE_H_

#include <string>
#include <vector>

namespace kforge::eval {

struct NvrtcCompileRequest {
  std::string source;
  std::string name = "kernels.cu";   // the file name NVRTC's log uses
  std::string arch = "sm_90";        // --gpu-architecture
  std::vector<std::string> options;  // after the engine's own (-std=c++17, -default-device...)
  std::string cache_dir;             // empty: no disk cache
};

struct NvrtcCompileOutput {
  bool ok = false;
  std::string cubin;  // when ok
  std::string log;    // NVRTC's log (bounded); on failure it starts with NVRTC's result name
  bool cache_hit = false;
  double seconds = 0;  // spent compiling (0 on a cache hit)
};

NvrtcCompileOutput CompileWithNvrtc(const NvrtcCompileRequest& request);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_NVRTC_COMPILE_H_
