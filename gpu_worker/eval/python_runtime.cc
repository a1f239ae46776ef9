#include "gpu_worker/eval/python_runtime.h"

#include <cstdlib>
#include <sstream>

#include "gpu_worker/eval/nvrtc_module.h"

namespace py = pybind11;

namespace kforge::eval {

std::unique_ptr<py::scoped_interpreter> StartPython(std::string* error) {
  RegisterKforgePythonModule();
  auto interp = std::make_unique<py::scoped_interpreter>(false);  // no signal handlers
  try {
    py::module_ sys = py::module_::import("sys");
    py::list path = sys.attr("path");
    path.insert(0, KFORGE_SITE_PACKAGES);
    if (const char* extra = std::getenv("KFORGE_PYTHONPATH")) {
      std::stringstream ss(extra);
      std::string item;
      int i = 0;
      while (std::getline(ss, item, ':')) {
        if (!item.empty()) path.insert(i++, item);
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

std::string DescribePythonError(const py::error_already_set& e, size_t max_bytes) {
  std::string out = e.what();
  if (out.size() > max_bytes) {
    // Keep the head (exception and message) and the tail (innermost frames).
    out = out.substr(0, max_bytes / 2) + "\n[...]\n" + out.substr(out.size() - max_bytes / 2);
  }
  return out;
}

}  // namespace kforge::eval
