#include "gpu_worker/eval/engine_paths.h"

#include <link.h>
#include <unistd.h>

#include <cstdlib>
#include <set>

#include "gpu_worker/eval/cpp_dialect.h"

namespace kforge::eval {
namespace {

std::string Parent(const std::string& path) { return path.substr(0, path.find_last_of('/')); }

}  // namespace

std::vector<std::string> PathsTheEngineReads() {
  std::set<std::string> paths = {KFORGE_SITE_PACKAGES, KFORGE_CUDA_INCLUDE};
  // A venv's site-packages: the venv itself (its bin/ may hold the tools torch runs).
  std::string venv = Parent(Parent(Parent(KFORGE_SITE_PACKAGES)));
  if (access((venv + "/pyvenv.cfg").c_str(), R_OK) == 0) paths.insert(venv);
  CppToolchain tc = DefaultCppToolchain();
  paths.insert(tc.cxx);
  paths.insert(tc.include_dirs.begin(), tc.include_dirs.end());
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        std::string name = info->dlpi_name ? info->dlpi_name : "";
        if (name.empty() || name[0] != '/') return 0;
        // RUNPATHs such as torch/lib/../../nvidia/cu13/lib: the view takes real paths.
        if (char* real = realpath(name.c_str(), nullptr)) {
          name = real;
          free(real);
        }
        static_cast<std::set<std::string>*>(out)->insert(Parent(name));
        return 0;
      },
      &paths);
  return {paths.begin(), paths.end()};
}

}  // namespace kforge::eval
