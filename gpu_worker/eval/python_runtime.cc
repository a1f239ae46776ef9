#include "gpu_worker/eval/python_runtime.h"

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "gpu_worker/eval/nvrtc_module.h"

namespace py = pybind11;

namespace kforge::eval {

std::unique_ptr<py::scoped_interpreter> StartPython(std::string* error) {
  RegisterKforgePythonModule();
  // No signal handlers, and no program directory on sys.path: that would be "", the cwd,
  // which is the evaluation's scratch directory, where the candidate writes. A module it left
  // there under a name the judge imports later would run in the judge.
  auto interp = std::make_unique<py::scoped_interpreter>(false, 0, nullptr, false);
  try {
    py::module_ sys = py::module_::import("sys");
    py::list path = sys.attr("path");
    path.insert(0, KFORGE_SITE_PACKAGES);
    if (const char* extra = std::getenv("KFORGE_PYTHONPATH")) {
      std::stringstream ss(extra);
      std::string item;
      int i = 0;
      while (std::getline(ss, item, ':')) {
        // Absolute now: a relative entry would be looked up from each evaluation's cwd, its
        // scratch directory, where the candidate writes.
        if (!item.empty()) path.insert(i++, std::filesystem::absolute(item).string());
      }
    }
    sys.attr("argv") = py::make_tuple("kforge-eval");
    sys.attr("dont_write_bytecode") = true;
    py::module_::import("torch");
    SetTorchNumerics(false);
    py::module_ kforge = py::module_::import("kforge");
    sys.attr("modules")["kforge.cuda"] = kforge.attr("cuda");
  } catch (const py::error_already_set& e) {
    *error = "cannot import torch in the embedded interpreter: " + DescribePythonError(e);
    return nullptr;
  }
  return interp;
}

void SetTorchNumerics(bool torch_defaults) {
  // Unless torch_defaults (numerics "torch"): fp32 convolutions in fp32, in the judge and in
  // the candidate's process alike. torch's default lets cuDNN use TF32, and two processes
  // whose convolutions pick different algorithms (a candidate's cudnn.benchmark, its
  // channels_last layout) then differ by 1e-3, ten times the fp32 tolerance
  // (docs/evaluation.md, "Numerics of the reference").
  // Matmuls already default to fp32. A candidate may turn TF32 on in its own process only.
  py::module_::import("torch").attr("backends").attr("cudnn").attr("allow_tf32") = torch_defaults;
}

bool WarmImports(const std::string& modules, const std::string& dir,
                 std::vector<std::string>* warnings, std::string* error) {
  py::dict scope;
  scope["modules"] = modules;
  scope["d"] = dir;
  try {
    py::exec(R"py(
import importlib, os, tempfile
import torch
failed = []
saved = {k: os.environ.get(k) for k in ("TMPDIR", "HOME", "PYTORCH_NVML_BASED_CUDA_CHECK")}
cwd = os.getcwd()
os.environ["TMPDIR"] = os.environ["HOME"] = d
# Inductor asks torch.cuda.is_available() at import: through NVML, not the CUDA driver, which
# once initialised here would be unusable in every process the server forks. Where NVML cannot
# answer, torch would ask the driver: it is told no device instead, and the server says so.
os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
driver_count = torch._C._cuda_getDeviceCount
asked_driver = []
def no_driver():
    asked_driver.append(True)
    return 0
torch._C._cuda_getDeviceCount = no_driver
tempfile.tempdir = None
os.chdir(d)
try:
    for name in modules.split(","):
        if name.strip():
            try:
                importlib.import_module(name.strip())
            except Exception as e:  # the evaluations import it themselves, or fail there
                failed.append(f"not imported ahead: {name.strip()}: {type(e).__name__}: {e}")
    if torch.cuda.is_initialized():
        raise RuntimeError("the warm imports initialised CUDA in the fork server")
finally:
    torch._C._cuda_getDeviceCount = driver_count
    # torch's NVML check initialises NVML and leaves it so: shut it again, so that the
    # evaluations the server forks start from no NVML state, as before these imports (the
    # judge initialises its own for the system facts).
    if not asked_driver:
        try:
            import ctypes
            ctypes.CDLL("libnvidia-ml.so.1").nvmlShutdown()
        except (OSError, AttributeError):
            pass
    else:
        failed.append("torch.cuda.is_available() found no NVML during the imports and was told "
                      "no device there (the CUDA driver is left for the evaluations)")
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    tempfile.tempdir = None
    os.chdir(cwd)
)py",
             scope);
    for (const auto& f : py::list(scope["failed"])) warnings->push_back(py::str(f));
  } catch (const py::error_already_set& e) {
    *error = DescribePythonError(e);
    return false;
  }
  return true;
}

std::string DescribePythonError(const py::error_already_set& e, size_t max_bytes) {
  std::string out = e.what();
  if (out.size() > max_bytes) {
    // Keep the head (exception and message) and the tail (innermost frames).
    out = out.substr(0, max_bytes / 2) + "\n[...]\n" + out.substr(out.size() - max_bytes / 2);
  }
  return out;
}

}  // namespace kforge::eval
