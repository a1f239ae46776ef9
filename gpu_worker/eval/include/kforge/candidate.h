// The contract of a `cpp`-dialect candidate: one C++ file, compiled by the host compiler into
// a shared object that the engine loads into its own process and calls with at::Tensor
// inputs. Kernels are CUDA C++ in a raw string that the engine compiles with NVRTC for its
// target architecture; the host code launches them through kforge::Context.
//
//   // kforge: dialect=cpp
//   #include <kforge/candidate.h>
//
//   KFORGE_KERNELS(R"(
//   extern "C" __global__ void relu_kernel(const float* x, float* y, long long n) {
//     long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
//     if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
//   }
//   )");
//
//   std::vector<at::Tensor> forward(kforge::Context& ctx, const std::vector<at::Tensor>& in) {
//     at::Tensor x = in[0].contiguous();
//     at::Tensor y = at::empty_like(x);
//     int64_t n = x.numel();
//     ctx.launch("relu_kernel", (n + 255) / 256, 256, 0, {x, y, n});
//     return {y};
//   }
//
// What the candidate provides:
// - `forward` (required), exactly with the signature above, at global scope: called with the
//   task's get_inputs() tensors (on the evaluated device), returns the outputs. Timed.
// - `void init(kforge::Context& ctx, const std::vector<at::Tensor>& params)` (optional, global):
//   called once before the first forward, untimed, with copies of the reference model's
//   parameters and buffers in state_dict order (same weights as the reference). Keep what
//   forward needs in variables of the candidate's own (file-static) state.
// - `KFORGE_KERNELS(R"(...)")` (optional, at most once): the CUDA C++ source of the kernels,
//   compiled by NVRTC with -default-device; kernels must be `extern "C"`. Compile errors are
//   reported with line numbers of the candidate file.
// - `KFORGE_NVRTC_OPTIONS("--use_fast_math ...")` (optional): extra NVRTC options, separated
//   by spaces.
//
// ctx.launch(kernel, grid, block, shared_mem_bytes, {args...}) launches on the current CUDA
// stream of the evaluated device (the stream the engine times). Arguments: a tensor passes its
// device pointer (an undefined tensor passes nullptr), a pointer passes itself, integers and
// floating-point values are converted to the size of the kernel's parameter as NVRTC compiled
// it (4 or 8 bytes; floats to float or double), bools to a 1-byte parameter. A wrong count or
// an impossible conversion throws std::invalid_argument. The engine counts launches: a
// candidate with kernels whose forward launches none of them is treated as a fallback.
//
// Without a GPU (the engine's CPU mode) kernels still compile, but ctx.launch throws an error
// saying no GPU is available; a forward made only of ATen calls runs on the CPU.
//
// Exceptions thrown by init/forward (c10::Error from ATen, std::exception) are caught in the
// shared object and reported as the candidate's runtime error with their message. The file
// is compiled with -O2 -std=c++17 against the LibTorch of the engine (ATen/ATen.h and
// torch/torch.h are available), and must not keep state across calls that changes results.
//
// Threading: the engine calls init and forward from one thread. The Context is owned by the
// engine and valid only during the call it is passed to.
#ifndef KFORGE_CANDIDATE_H_
#define KFORGE_CANDIDATE_H_

#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

// Bumped whenever the layout of the types below or the entry points change; the engine refuses
// a shared object built against another version.
#define KFORGE_CANDIDATE_ABI_VERSION 1

namespace kforge {

// Grid or block extent. Each dimension must be in [1, 2^31) (the engine checks).
struct Dim3 {
  Dim3(int64_t x = 1, int64_t y = 1, int64_t z = 1) : x(x), y(y), z(z) {}
  int64_t x, y, z;
};

// One kernel argument, converted by the engine to the parameter's size.
class KernelArg {
 public:
  enum class Kind { kTensor, kPointer, kInt, kFloat, kBool };

  KernelArg(const at::Tensor& t) : kind_(Kind::kTensor), tensor_(&t) {}
  KernelArg(const void* p) : kind_(Kind::kPointer), pointer_(p) {}
  KernelArg(std::nullptr_t) : kind_(Kind::kPointer) {}
  KernelArg(bool b) : kind_(Kind::kBool), int_(b ? 1 : 0) {}
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  KernelArg(T v)
      : kind_(Kind::kInt), int_(static_cast<int64_t>(v)), unsigned_type_(std::is_unsigned_v<T>) {}
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  KernelArg(T v) : kind_(Kind::kFloat), float_(static_cast<double>(v)) {}
  // Anything else (at::Half, enums, at::Scalar...) would otherwise convert silently to bool.
  template <typename T, std::enable_if_t<!std::is_arithmetic_v<T> && !std::is_pointer_v<T> &&
                                             !std::is_array_v<T> && !std::is_null_pointer_v<T> &&
                                             !std::is_convertible_v<const T&, const at::Tensor&>,
                                         int> = 0>
  KernelArg(const T&) : kind_(Kind::kBool) {
    static_assert(sizeof(T) == 0,
                  "kforge: unsupported kernel argument type; pass a tensor, a pointer, an "
                  "integer, a float/double or a bool (cast enums and at::Half explicitly)");
  }

  Kind kind() const { return kind_; }
  const at::Tensor& tensor() const { return *tensor_; }
  const void* pointer() const { return pointer_; }
  // The integer's bits; an unsigned type's value is static_cast<uint64_t>(integer()).
  int64_t integer() const { return int_; }
  bool unsigned_type() const { return unsigned_type_; }
  double floating() const { return float_; }

 private:
  Kind kind_;
  const at::Tensor* tensor_ = nullptr;
  const void* pointer_ = nullptr;
  int64_t int_ = 0;
  bool unsigned_type_ = false;
  double float_ = 0;
};

// The engine's services for a candidate. Implemented by the engine.
class Context {
 public:
  // Launches `kernel` (a name from KFORGE_KERNELS) on the current CUDA stream.
  void launch(const char* kernel, Dim3 grid, Dim3 block, size_t shared_mem,
              std::initializer_list<KernelArg> args) {
    Launch(kernel, grid, block, shared_mem, args.begin(), args.size());
  }
  void launch(const std::string& kernel, Dim3 grid, Dim3 block, size_t shared_mem,
              const std::vector<KernelArg>& args) {
    Launch(kernel.c_str(), grid, block, shared_mem, args.data(), args.size());
  }
  // The device the inputs live on (a CUDA device, or the CPU in the engine's CPU mode).
  virtual at::Device device() const = 0;
  // False in the engine's CPU mode: launch() would throw.
  virtual bool gpu_available() const = 0;

 protected:
  virtual ~Context() = default;
  virtual void Launch(const char* kernel, const Dim3& grid, const Dim3& block, size_t shared_mem,
                      const KernelArg* args, size_t num_args) = 0;
};

}  // namespace kforge

#define KFORGE_KERNELS(source)                                                               \
  extern "C" __attribute__((visibility("default"))) const char* kforge_candidate_kernels() { \
    return source;                                                                           \
  }
#define KFORGE_NVRTC_OPTIONS(options)                                                        \
  extern "C" __attribute__((visibility("default"))) const char* kforge_candidate_options() { \
    return options;                                                                          \
  }

// The entry points the engine looks up with dlsym. The engine includes this header with
// KFORGE_CANDIDATE_ENGINE_SIDE defined, for the types only.
#ifndef KFORGE_CANDIDATE_ENGINE_SIDE
// The candidate's functions. `init` is weak so that a candidate may leave it out.
std::vector<at::Tensor> forward(kforge::Context& ctx, const std::vector<at::Tensor>& inputs);
void init(kforge::Context& ctx, const std::vector<at::Tensor>& params) __attribute__((weak));

namespace kforge::candidate_internal {
// Runs `f`, turning any exception into a message in *error. Returns false on an exception.
template <typename F>
bool Guard(std::string* error, F&& f) {
  try {
    f();
    return true;
  } catch (const c10::Error& e) {
    *error = e.what_without_backtrace();
  } catch (const std::exception& e) {
    *error = e.what();
  } catch (...) {
    *error = "unknown exception (not derived from std::exception)";
  }
  return false;
}
}  // namespace kforge::candidate_internal

extern "C" __attribute__((visibility("default"))) int kforge_candidate_abi_version() {
  return KFORGE_CANDIDATE_ABI_VERSION;
}
extern "C" __attribute__((visibility("default"))) bool kforge_candidate_has_init() {
  return &init != nullptr;
}
extern "C" __attribute__((visibility("default"))) bool kforge_candidate_init(
    kforge::Context* ctx, const std::vector<at::Tensor>* params, std::string* error) {
  return kforge::candidate_internal::Guard(error, [&] {
    if (&init != nullptr) init(*ctx, *params);
  });
}
extern "C" __attribute__((visibility("default"))) bool kforge_candidate_forward(
    kforge::Context* ctx, const std::vector<at::Tensor>* inputs, std::vector<at::Tensor>* outputs,
    std::string* error) {
  return kforge::candidate_internal::Guard(error, [&] { *outputs = forward(*ctx, *inputs); });
}
#endif  // KFORGE_CANDIDATE_ENGINE_SIDE

#endif  // KFORGE_CANDIDATE_H_
