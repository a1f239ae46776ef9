// Python-side plumbing for the engine: executing task and candidate sources as modules,
// seeding, moving inputs to the device, cloning them, converting outputs to tensors, sharing
// the reference's weights with the candidate, and snapshotting process-wide torch switches.
//
// Functions raise pybind11::error_already_set when Python code fails; the engine turns that
// into a verdict. Call with the GIL held (the engine's main thread).
#ifndef KFORGE_GPU_WORKER_EVAL_MODEL_IO_H_
#define KFORGE_GPU_WORKER_EVAL_MODEL_IO_H_

#include <ATen/ATen.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kforge::eval {

struct Target {
  bool cuda = false;
  int index = 0;
  at::Device device() const { return cuda ? at::Device(at::kCUDA, index) : at::Device(at::kCPU); }
  std::string name() const { return cuda ? "cuda:" + std::to_string(index) : "cpu"; }
};

// Executes `source` as a fresh module named `name` and returns it.
pybind11::object ExecModule(const std::string& name, const std::string& source);

// Seeds torch's CPU and CUDA generators, Python's random and numpy (if loaded).
void SeedAll(uint64_t seed);

// Calls `fn(*args)` with torch's default device set to `target`, so that factory functions
// (torch.rand, nn.Linear's parameters...) allocate there directly: on a GPU this avoids
// generating multi-gigabyte inputs on the CPU.
pybind11::object CallOnDevice(const pybind11::object& fn, const Target& target,
                              const pybind11::object& args = pybind11::tuple());

// get_inputs()/get_init_inputs() result as a list, tensors moved to `target`.
pybind11::list ToDevice(const pybind11::handle& items, const Target& target);
// Deep-enough copy: tensors cloned, other values shared.
pybind11::list CloneInputs(const pybind11::list& items);
// The tensors among `items`.
std::vector<at::Tensor> TensorsOf(const pybind11::list& items);

struct Outputs {
  std::vector<at::Tensor> tensors;
  std::string error;          // not a tensor or a tuple/list of tensors
  bool subclass = false;      // some output is a torch.Tensor subclass (lazy tensor trick)
};
Outputs OutputsToTensors(const pybind11::object& out);

// Copies every parameter and buffer of `ref` into `cand` where the name and shape match.
// Returns how many were copied.
int CopyMatchingState(const pybind11::object& ref, const pybind11::object& cand);

// Process-wide numerical switches (TF32 and reduced-precision flags, cudnn flags, matmul
// precision, default dtype, deterministic algorithms) as one comparable string.
std::string SwitchSnapshot();

// Poisons the caching allocator's free memory with NaN bytes so that an output the candidate
// does not write reads as NaN (catches stale-memory tricks).
void PoisonFreeMemory(const Target& target, int64_t bytes);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_MODEL_IO_H_
