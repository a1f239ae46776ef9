#include "gpu_worker/eval/math_preload.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <filesystem>

namespace kforge::eval {
namespace {

// The parts cuDNN 9 opens at its first convolution (session 32's probe, from /proc/self/maps).
constexpr const char* kCudnnParts[] = {"graph", "engines_precompiled", "engines_runtime_compiled",
                                       "heuristic"};
constexpr char kLibcudnn[] = "libcudnn.so.";

int FindCudnn(struct dl_phdr_info* info, size_t, void* data) {
  const std::filesystem::path p = info->dlpi_name ? info->dlpi_name : "";
  if (p.filename().string().rfind(kLibcudnn, 0) == 0) {
    *static_cast<std::filesystem::path*>(data) = p;
    return 1;
  }
  return 0;
}

}  // namespace

std::vector<std::string> CudnnPartPaths(const std::string& dir, const std::string& libcudnn,
                                        std::vector<std::string>* notes) {
  std::vector<std::string> paths;
  if (libcudnn.rfind(kLibcudnn, 0) != 0) {
    notes->push_back("not a libcudnn soname: " + libcudnn);
    return paths;
  }
  const std::string version = libcudnn.substr(sizeof kLibcudnn - 1);  // "9"
  for (const char* part : kCudnnParts) {
    // stat, not std::filesystem: libtorch exports its own copies of those symbols, and a
    // binary linked with it may bind to them (math_preload_test met one that crashed).
    const std::string p = dir + "/libcudnn_" + part + ".so." + version;
    struct stat st;
    if (stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      paths.push_back(p);
    } else {
      notes->push_back("not found: " + p);
    }
  }
  return paths;
}

std::vector<std::string> PreloadMathLibraries(std::vector<std::string>* notes) {
  std::vector<std::string> loaded;
  std::filesystem::path libcudnn;
  dl_iterate_phdr(FindCudnn, &libcudnn);
  if (libcudnn.empty()) {
    notes->push_back("no libcudnn is loaded: nothing preloaded");
    return loaded;
  }
  for (const std::string& path :
       CudnnPartPaths(libcudnn.parent_path().string(), libcudnn.filename().string(), notes)) {
    // Resolved now, in the template, so that no forked process pays for the relocations.
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      const char* why = dlerror();
      notes->push_back("not loaded: " + path + ": " + (why ? why : "dlopen failed"));
      continue;
    }
    loaded.push_back(path);
  }
  return loaded;
}

}  // namespace kforge::eval
