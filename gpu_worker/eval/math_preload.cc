#include "gpu_worker/eval/math_preload.h"

#include <dlfcn.h>
#include <link.h>

#include <filesystem>
#include <system_error>

namespace kforge::eval {
namespace {

// The sub-libraries cuDNN 9 opens at its first convolution (session 32's probe, from
// /proc/self/maps), by file-name prefix.
constexpr const char* kCudnnParts[] = {"libcudnn_graph.so.", "libcudnn_engines_precompiled.so.",
                                       "libcudnn_engines_runtime_compiled.so.",
                                       "libcudnn_heuristic.so."};

int FindCudnn(struct dl_phdr_info* info, size_t, void* data) {
  const std::filesystem::path p = info->dlpi_name ? info->dlpi_name : "";
  if (p.filename().string().rfind("libcudnn.so.", 0) == 0) {
    *static_cast<std::filesystem::path*>(data) = p.parent_path();
    return 1;
  }
  return 0;
}

}  // namespace

std::vector<std::string> PreloadMathLibraries(std::vector<std::string>* notes) {
  std::vector<std::string> loaded;
  std::filesystem::path dir;
  dl_iterate_phdr(FindCudnn, &dir);
  if (dir.empty()) {
    notes->push_back("no libcudnn is loaded: nothing preloaded");
    return loaded;
  }
  for (const char* prefix : kCudnnParts) {
    std::string found;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      if (e.path().filename().string().rfind(prefix, 0) == 0) found = e.path().string();
    }
    if (found.empty()) {
      notes->push_back(std::string("not found in ") + dir.string() + ": " + prefix + "*");
      continue;
    }
    // Resolved now, in the template, so that no forked process pays for the relocations.
    if (dlopen(found.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      const char* why = dlerror();
      notes->push_back("not loaded: " + found + ": " + (why ? why : "dlopen failed"));
      continue;
    }
    loaded.push_back(found);
  }
  return loaded;
}

}  // namespace kforge::eval
