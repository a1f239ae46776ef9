#include "gpu_worker/eval/nvrtc_compile.h"

#include <nvrtc.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/base/files.h"
#include "common/base/sha256.h"

namespace kforge::eval {
namespace {

constexpr size_t kMaxNvrtcLogBytes = 16 << 10;

std::string Bounded(std::string log, size_t max_bytes) {
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (log.size() > max_bytes) log = log.substr(0, max_bytes) + "\n[log truncated]";
  return log;
}

}  // namespace

NvrtcCompileOutput CompileWithNvrtc(const NvrtcCompileRequest& request) {
  NvrtcCompileOutput out;
  std::vector<std::string> opts = {"--gpu-architecture=" + request.arch, "--std=c++17",
                                   "-default-device", "-I" KFORGE_CUDA_INCLUDE};
  opts.insert(opts.end(), request.options.begin(), request.options.end());
  std::string key_material = request.source;
  for (const auto& o : opts) key_material += "\n--" + o;
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  key_material += "\nnvrtc " + std::to_string(major) + "." + std::to_string(minor);
  std::string cache_path;
  if (!request.cache_dir.empty()) {
    cache_path = request.cache_dir + "/" + Sha256Hex(key_material) + ".cubin";
    out.cubin = ReadFileOrEmpty(cache_path);
    if (!out.cubin.empty()) {
      out.ok = out.cache_hit = true;
      return out;
    }
  }
  auto start = std::chrono::steady_clock::now();
  nvrtcProgram prog;
  nvrtcResult res =
      nvrtcCreateProgram(&prog, request.source.c_str(), request.name.c_str(), 0, nullptr, nullptr);
  if (res != NVRTC_SUCCESS) {
    out.log = std::string("nvrtcCreateProgram: ") + nvrtcGetErrorString(res);
    return out;
  }
  std::vector<const char*> copts;
  for (const auto& o : opts) copts.push_back(o.c_str());
  res = nvrtcCompileProgram(prog, static_cast<int>(copts.size()), copts.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 0) nvrtcGetProgramLog(prog, log.data());
  out.log = Bounded(log, kMaxNvrtcLogBytes);
  if (res == NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetCUBINSize(prog, &size);
    out.cubin.resize(size);
    nvrtcGetCUBIN(prog, out.cubin.data());
    out.ok = true;
  } else {
    out.log = std::string(nvrtcGetErrorString(res)) + "\n" + out.log;
  }
  nvrtcDestroyProgram(&prog);
  out.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (out.ok && !cache_path.empty()) WriteFileAtomically(cache_path, out.cubin);
  return out;
}

}  // namespace kforge::eval
