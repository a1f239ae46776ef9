#include "gpu_worker/eval/nvrtc_module.h"

#include <c10/cuda/CUDAStream.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>
#include <pybind11/embed.h>
#include <pybind11/stl.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <unordered_map>
#include <vector>

#include "gpu_worker/eval/cuda_driver.h"
#include "gpu_worker/eval/kernel_args.h"
#include "gpu_worker/eval/nvrtc_compile.h"

namespace py = pybind11;

namespace kforge::eval {
namespace {

NvrtcConfig g_config;
std::atomic<uint64_t> g_launches{0};
NvrtcCompileStats g_stats;

// Raised to Python as kforge.cuda.CompileError.
struct CompileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Compiles through the shared NVRTC path (nvrtc_compile.h) and keeps the statistics that the
// engine reports.
std::string CompileToCubin(const std::string& source, const std::vector<std::string>& user_opts,
                           const std::string& name) {
  NvrtcCompileRequest request;
  request.source = source;
  request.name = name;
  request.arch = g_config.arch;
  request.options = user_opts;
  request.cache_dir = g_config.cache_dir;
  NvrtcCompileOutput out = CompileWithNvrtc(request);
  if (out.cache_hit) {
    ++g_stats.cache_hits;
  } else {
    ++g_stats.compiles;
    g_stats.seconds += out.seconds;
    g_stats.last_log = out.log;
  }
  if (!out.ok) throw CompileError("NVRTC: " + out.log);
  return out.cubin;
}

unsigned Dim(const py::handle& v, int axis) {
  if (py::isinstance<py::int_>(v)) return axis == 0 ? v.cast<unsigned>() : 1u;
  auto seq = v.cast<std::vector<unsigned>>();
  if (seq.empty() || seq.size() > 3) throw py::value_error("grid/block must have 1 to 3 dims");
  return axis < static_cast<int>(seq.size()) ? seq[axis] : 1u;
}

class Kernel {
 public:
  Kernel(std::string name, CUfunction fn) : name_(std::move(name)), fn_(fn) {
    // Parameter layout, read once: count and size of each parameter.
    for (size_t i = 0;; ++i) {
      size_t offset = 0, size = 0;
      if (GetDriver().func_get_param_info(fn_, i, &offset, &size) != CUDA_SUCCESS) break;
      param_sizes_.push_back(size);
    }
  }

  void Launch(const py::object& grid, const py::object& block, unsigned shared_mem,
              const py::tuple& args) {
    if (args.size() != param_sizes_.size()) {
      throw py::type_error("kernel " + name_ + " takes " + std::to_string(param_sizes_.size()) +
                           " arguments, " + std::to_string(args.size()) + " given");
    }
    std::vector<std::array<unsigned char, 16>> storage(args.size());
    std::vector<void*> params(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      Pack(args[i], i, storage[i].data());
      params[i] = storage[i].data();
    }
    if (shared_mem > 48 * 1024) {
      CheckCu(GetDriver().func_set_attribute(fn_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             static_cast<int>(shared_mem)),
              "setting dynamic shared memory of " + name_);
    }
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream(g_config.device_index).stream();
    CheckCu(GetDriver().launch_kernel(fn_, Dim(grid, 0), Dim(grid, 1), Dim(grid, 2), Dim(block, 0),
                                      Dim(block, 1), Dim(block, 2), shared_mem,
                                      reinterpret_cast<CUstream>(stream), params.data(), nullptr),
            "launching " + name_);
    ++g_launches;
  }

 private:
  void Pack(const py::handle& arg, size_t i, unsigned char* out) {
    size_t size = param_sizes_[i];
    auto bad = [&](const std::string& why) {
      return py::type_error("kernel " + name_ + " argument " + std::to_string(i) + ": " + why);
    };
    if (THPVariable_Check(arg.ptr())) {
      const at::Tensor& t = THPVariable_Unpack(arg.ptr());
      if (size != sizeof(void*)) throw bad("a tensor needs a pointer parameter");
      if (!t.is_cuda()) throw bad("tensor is not on a CUDA device");
      void* p = t.data_ptr();
      std::memcpy(out, &p, sizeof p);
      return;
    }
    if (py::isinstance<py::bool_>(arg)) {
      if (size != 1) throw bad("bool needs a 1-byte parameter");
      out[0] = arg.cast<bool>() ? 1 : 0;
      return;
    }
    if (py::isinstance<py::int_>(arg)) {
      std::string why = PackInteger(arg.cast<int64_t>(), false, size, out);
      if (!why.empty()) throw bad(why);
      return;
    }
    if (py::isinstance<py::float_>(arg)) {
      std::string why = PackFloat(arg.cast<double>(), size, out);
      if (!why.empty()) throw bad(why);
      return;
    }
    throw bad("unsupported type " + std::string(py::str(py::type::handle_of(arg))));
  }

  std::string name_;
  CUfunction fn_;
  std::vector<size_t> param_sizes_;
};

class Module {
 public:
  Module(std::string cubin) : cubin_(std::move(cubin)) {
    if (g_config.gpu_available) {
      CheckCu(GetDriver().module_load_data(&module_, cubin_.data()), "loading the module");
    }
  }

  std::shared_ptr<Kernel> Get(const std::string& name) {
    if (!name.empty() && name[0] == '_') throw py::attribute_error(name);
    auto it = kernels_.find(name);
    if (it != kernels_.end()) return it->second;
    if (!g_config.gpu_available) {
      throw std::runtime_error("kforge.cuda: no GPU (CPU mode): kernel " + name +
                               " was compiled for " + g_config.arch + " but cannot run");
    }
    CUfunction fn;
    if (GetDriver().module_get_function(&fn, module_, name.c_str()) != CUDA_SUCCESS) {
      throw py::attribute_error("kforge.cuda: the module has no kernel named '" + name +
                                "' (kernels must be extern \"C\")");
    }
    auto k = std::make_shared<Kernel>(name, fn);
    kernels_[name] = k;
    return k;
  }

 private:
  std::string cubin_;
  CUmodule module_ = nullptr;
  std::unordered_map<std::string, std::shared_ptr<Kernel>> kernels_;
};

std::shared_ptr<Module> Compile(const std::string& source, const std::vector<std::string>& options,
                                const std::string& name) {
  return std::make_shared<Module>(CompileToCubin(source, options, name));
}

}  // namespace

void ConfigureNvrtc(const NvrtcConfig& config) {
  g_config = config;
  if (!g_config.cache_dir.empty()) mkdir(g_config.cache_dir.c_str(), 0700);
}

uint64_t NvrtcLaunchCount() { return g_launches.load(); }
NvrtcCompileStats GetNvrtcCompileStats() { return g_stats; }

PYBIND11_EMBEDDED_MODULE(kforge, m) {
  m.doc() = "kforge engine services for candidates";
  py::module_ cuda = m.def_submodule("cuda", "NVRTC kernels for nvrtc-dialect candidates");
  py::register_exception<CompileError>(cuda, "CompileError", PyExc_RuntimeError);
  py::class_<Kernel, std::shared_ptr<Kernel>>(cuda, "Kernel")
      .def("__call__", &Kernel::Launch, py::kw_only(), py::arg("grid"), py::arg("block"),
           py::arg("shared_mem") = 0, py::arg("args") = py::tuple());
  py::class_<Module, std::shared_ptr<Module>>(cuda, "Module").def("__getattr__", &Module::Get);
  cuda.def("compile", &Compile, py::arg("source"),
           py::arg("options") = std::vector<std::string>{}, py::arg("name") = "candidate.cu",
           "Compiles CUDA C++ with NVRTC for the engine's target architecture.");
}

void RegisterKforgePythonModule() {
  // PYBIND11_EMBEDDED_MODULE registers itself at static-initialisation time; this function
  // exists so that the linker keeps this translation unit.
}

}  // namespace kforge::eval
