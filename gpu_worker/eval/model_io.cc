#include "gpu_worker/eval/model_io.h"

#include <pybind11/embed.h>
#include <torch/csrc/autograd/python_variable.h>

namespace py = pybind11;

namespace kforge::eval {

py::object ExecModule(const std::string& name, const std::string& source) {
  py::module_ types = py::module_::import("types");
  py::object mod = types.attr("ModuleType")(name);
  py::dict ns = mod.attr("__dict__");
  ns["__builtins__"] = py::module_::import("builtins");
  ns["__file__"] = "<" + name + ">";
  // Registered so that pickling, dataclasses and load_inline's inspection find the module.
  py::module_::import("sys").attr("modules")[py::str(name)] = mod;
  py::module_ builtins = py::module_::import("builtins");
  py::object code = builtins.attr("compile")(source, "<" + name + ">", "exec");
  builtins.attr("exec")(code, ns);
  return mod;
}

void SeedAll(uint64_t seed) {
  py::module_ torch = py::module_::import("torch");
  torch.attr("manual_seed")(seed);
  py::module_::import("random").attr("seed")(seed);
  py::dict modules = py::module_::import("sys").attr("modules");
  if (modules.contains("numpy")) {
    modules["numpy"].attr("random").attr("seed")(seed % 4294967295ULL);
  }
}

py::object CallOnDevice(const py::object& fn, const Target& target, const py::object& args) {
  py::object ctx = py::module_::import("torch").attr("device")(target.name());
  ctx.attr("__enter__")();
  py::object out;
  try {
    out = fn(*args);
  } catch (...) {
    ctx.attr("__exit__")(py::none(), py::none(), py::none());
    throw;
  }
  ctx.attr("__exit__")(py::none(), py::none(), py::none());
  return out;
}

py::list ToDevice(const py::handle& items, const Target& target) {
  py::list out;
  py::str dev(target.name());
  for (py::handle item : items) {
    if (THPVariable_Check(item.ptr())) {
      out.append(item.attr("to")(dev));
    } else {
      out.append(item);
    }
  }
  return out;
}

py::list CloneInputs(const py::list& items) {
  py::list out;
  for (py::handle item : items) {
    out.append(THPVariable_Check(item.ptr()) ? item.attr("clone")() : py::reinterpret_borrow<py::object>(item));
  }
  return out;
}

std::vector<at::Tensor> TensorsOf(const py::list& items) {
  std::vector<at::Tensor> out;
  for (py::handle item : items) {
    if (THPVariable_Check(item.ptr())) out.push_back(THPVariable_Unpack(item.ptr()));
  }
  return out;
}

Outputs OutputsToTensors(const py::object& out) {
  Outputs o;
  py::object tensor_type = py::module_::import("torch").attr("Tensor");
  py::object param_type = py::module_::import("torch").attr("nn").attr("Parameter");
  auto take = [&](py::handle h) {
    if (!THPVariable_Check(h.ptr())) {
      o.error = "returned a " + std::string(py::str(py::type::handle_of(h).attr("__name__"))) +
                " where a tensor was expected";
      return false;
    }
    py::handle type = py::type::handle_of(h);
    if (!type.is(tensor_type) && !type.is(param_type)) o.subclass = true;
    o.tensors.push_back(THPVariable_Unpack(h.ptr()));
    return true;
  };
  if (py::isinstance<py::tuple>(out) || py::isinstance<py::list>(out)) {
    for (py::handle h : out) {
      if (!take(h)) return o;
    }
  } else {
    take(out);
  }
  return o;
}

int CopyMatchingState(const py::object& ref, const py::object& cand) {
  py::dict ref_state = ref.attr("state_dict")();
  py::dict cand_state = cand.attr("state_dict")();
  int copied = 0;
  py::object no_grad = py::module_::import("torch").attr("no_grad")();
  no_grad.attr("__enter__")();
  for (auto [key, value] : cand_state) {
    if (!ref_state.contains(key)) continue;
    py::object src = ref_state[key];
    if (!THPVariable_Check(value.ptr()) || !THPVariable_Check(src.ptr())) continue;
    const at::Tensor& dst_t = THPVariable_Unpack(value.ptr());
    const at::Tensor& src_t = THPVariable_Unpack(src.ptr());
    if (dst_t.sizes() != src_t.sizes()) continue;
    value.attr("copy_")(src);
    ++copied;
  }
  no_grad.attr("__exit__")(py::none(), py::none(), py::none());
  return copied;
}

std::string SwitchSnapshot() {
  py::dict g;
  py::exec(R"(
import torch
b = torch.backends
_kforge_switches = repr((
    b.cuda.matmul.allow_tf32, b.cuda.matmul.allow_fp16_reduced_precision_reduction,
    b.cuda.matmul.allow_bf16_reduced_precision_reduction, b.cudnn.allow_tf32,
    b.cudnn.benchmark, b.cudnn.deterministic, b.cudnn.enabled,
    torch.get_float32_matmul_precision(), torch.get_default_dtype(),
    torch.are_deterministic_algorithms_enabled(),
))
)", g);
  return g["_kforge_switches"].cast<std::string>();
}

void PoisonFreeMemory(const Target& target, int64_t bytes) {
  if (!target.cuda || bytes <= 0) return;
  at::Tensor t = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(target.device()));
  t.fill_(0xFF);  // every float pattern 0xFF.. is a NaN
}

}  // namespace kforge::eval
