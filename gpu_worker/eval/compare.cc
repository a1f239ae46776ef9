#include "gpu_worker/eval/compare.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "gpu_worker/eval/compare_element.h"
#include "gpu_worker/eval/cuda_driver.h"
#include "gpu_worker/eval/nvrtc_compile.h"

namespace kforge::eval {
namespace {

std::string Shape(const at::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

// Outputs of at least this many elements on a GPU are checked there, in one pass of a kernel;
// smaller ones are copied to the host, which costs less than compiling the kernel.
constexpr int64_t kDeviceMinElements = 1 << 20;
constexpr int kBlock = 256;  // the kernel's block size (its reduction assumes it)

// The comparison kernel around kCompareElementSource, instantiated for one element type per
// compile (all nine in one program take NVRTC 1.5 s, one 0.1 s). It reads both outputs once and
// writes one CompareAcc per block.
constexpr char kCompareKernels[] = R"(
__device__ double CompareLoad(float v) { return v; }
__device__ double CompareLoad(double v) { return v; }
__device__ double CompareLoad(signed char v) { return v; }
__device__ double CompareLoad(unsigned char v) { return v; }
__device__ double CompareLoad(short v) { return v; }
__device__ double CompareLoad(int v) { return v; }
__device__ double CompareLoad(long long v) { return (double)v; }
struct CompareHalf { unsigned short bits; };
struct CompareBf16 { unsigned short bits; };
__device__ double CompareLoad(CompareHalf v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
  return f;
}
__device__ double CompareLoad(CompareBf16 v) {
  return __uint_as_float((unsigned int)v.bits << 16);
}

template <typename T>
__device__ void CompareRun(const T* __restrict__ r, const T* __restrict__ c, long long n,
                           double atol, double rtol, CompareAcc* partials) {
  CompareAcc a;
  CompareAccInit(&a);
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    CompareElement(CompareLoad(r[i]), CompareLoad(c[i]), atol, rtol, &a);
  }
  __shared__ CompareAcc block[256];
  block[threadIdx.x] = a;
  __syncthreads();
  for (unsigned int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) CompareMerge(&block[threadIdx.x], &block[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = block[0];
}

#define KFORGE_COMPARE_KERNEL(NAME, T)                                                  \
  extern "C" __global__ void __launch_bounds__(256)                                     \
      NAME(const T* r, const T* c, long long n, double atol, double rtol,               \
           CompareAcc* partials) {                                                      \
    CompareRun<T>(r, c, n, atol, rtol, partials);                                       \
  }
)";

// The element type of the kernel for a tensor type, as the kernel source spells it; nullptr
// for the types that are compared as float64.
const char* KernelType(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return "float";
    case at::kDouble:
      return "double";
    case at::kHalf:
      return "CompareHalf";
    case at::kBFloat16:
      return "CompareBf16";
    case at::kChar:
      return "signed char";
    case at::kByte:
    case at::kBool:
      return "unsigned char";
    case at::kShort:
      return "short";
    case at::kInt:
      return "int";
    case at::kLong:
      return "long long";
    default:
      return nullptr;
  }
}

// --fmad=false: no fused multiply-adds, so every product and sum rounds as in the host loop
// (compiled with -ffp-contract=off) and an element exactly on the tolerance boundary gets the
// same decision on both.
NvrtcCompileOutput CompileCompareKernel(const std::string& arch, at::ScalarType type) {
  NvrtcCompileRequest req;
  req.source = CompareKernelSource(type);
  req.name = "kforge_compare.cu";
  req.arch = arch;
  req.options = {"--fmad=false"};
  return CompileWithNvrtc(req);
}

// PrepareCompareKernels' cubins, by architecture and type.
std::map<std::pair<std::string, at::ScalarType>, std::string>& PreparedKernels() {
  static auto* prepared = new std::map<std::pair<std::string, at::ScalarType>, std::string>;
  return *prepared;
}

// The comparison kernel for `type` on `device`, compiled once per process and type, or
// prepared by the process it was forked from. Not through the cubin cache: that directory is
// writable by candidates, and a planted cubin would decide correctness. Throws
// std::runtime_error.
CUfunction DeviceKernel(int device, at::ScalarType type) {
  static std::map<std::pair<int, at::ScalarType>, CUfunction> kernels;
  auto key = std::make_pair(device, type);
  if (auto it = kernels.find(key); it != kernels.end()) return it->second;
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) {
    throw std::runtime_error("kforge: cannot read the properties of CUDA device " +
                             std::to_string(device));
  }
  const std::string arch = "sm_" + std::to_string(p.major) + std::to_string(p.minor);
  std::string cubin;
  if (auto it = PreparedKernels().find({arch, type}); it != PreparedKernels().end()) {
    cubin = it->second;
  } else {
    NvrtcCompileOutput nv = CompileCompareKernel(arch, type);
    if (!nv.ok) {
      throw std::runtime_error("kforge: the comparison kernel did not compile: " + nv.log);
    }
    cubin = std::move(nv.cubin);
  }
  CUmodule module = nullptr;
  CheckCu(GetDriver().module_load_data(&module, cubin.data()), "loading the comparison kernel");
  CUfunction fn = nullptr;
  CheckCu(GetDriver().module_get_function(&fn, module, "kforge_compare"),
          "finding the comparison kernel");
  kernels[key] = fn;
  return fn;
}

CompareAcc CompareOnDevice(const at::Tensor& r, const at::Tensor& c, const Tolerance& tol) {
  int device = r.get_device();
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));  // the driver calls' context
  CUfunction fn = DeviceKernel(device, r.scalar_type());
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  int64_t n = r.numel();
  int64_t blocks = std::min<int64_t>((n + kBlock - 1) / kBlock, 8 * std::max(sms, 1));
  static_assert(sizeof(CompareAcc) == 7 * sizeof(double));
  at::Tensor partials = at::empty({blocks * 7}, r.options().dtype(at::kDouble));
  const void* r_ptr = r.const_data_ptr();
  const void* c_ptr = c.const_data_ptr();
  long long count = n;
  double atol = tol.atol, rtol = tol.rtol;
  void* out = partials.data_ptr();
  void* args[] = {&r_ptr, &c_ptr, &count, &atol, &rtol, &out};
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device).stream();
  CheckCu(GetDriver().launch_kernel(fn, static_cast<unsigned>(blocks), 1, 1, kBlock, 1, 1, 0,
                                    reinterpret_cast<CUstream>(stream), args, nullptr),
          "launching the comparison kernel");
  at::Tensor host = partials.cpu();
  const CompareAcc* parts = reinterpret_cast<const CompareAcc*>(host.const_data_ptr<double>());
  CompareAcc total;
  CompareAccInit(&total);
  for (int64_t b = 0; b < blocks; ++b) CompareMerge(&total, &parts[b]);
  return total;
}

CompareAcc CompareOnHost(const at::Tensor& r, const at::Tensor& c, const Tolerance& tol) {
  constexpr int64_t kGrain = 1 << 16;
  int64_t n = r.numel();
  std::vector<CompareAcc> parts((n + kGrain - 1) / kGrain);
  AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBFloat16, at::kBool, r.scalar_type(), "compare", [&] {
    const scalar_t* rp = r.const_data_ptr<scalar_t>();
    const scalar_t* cp = c.const_data_ptr<scalar_t>();
    at::parallel_for(0, static_cast<int64_t>(parts.size()), 1, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        CompareAccInit(&parts[p]);
        for (int64_t i = p * kGrain, stop = std::min(n, i + kGrain); i < stop; ++i) {
          CompareElement(static_cast<double>(rp[i]), static_cast<double>(cp[i]), tol.atol, tol.rtol,
                         &parts[p]);
        }
      }
    });
  });
  CompareAcc total;
  CompareAccInit(&total);
  for (const CompareAcc& p : parts) CompareMerge(&total, &p);
  return total;
}

// Both outputs as flat contiguous tensors of one element type the kernels know (complex as
// pairs of reals; other types as float64), on the reference's device.
at::Tensor Flat(const at::Tensor& t, const at::Device& device) {
  at::Tensor f = t.detach().to(device);
  if (f.is_complex()) f = at::view_as_real(f.resolve_conj());
  if (!KernelType(f.scalar_type())) f = f.to(at::kDouble);
  return f.reshape({-1}).contiguous();
}

CompareAcc Compare(const at::Tensor& ref, const at::Tensor& cand, const Tolerance& tol) {
  at::Tensor r = Flat(ref, ref.device());
  at::Tensor c = Flat(cand, ref.device());
  if (r.is_cuda() && r.numel() >= kDeviceMinElements) return CompareOnDevice(r, c, tol);
  return CompareOnHost(r.cpu(), c.cpu(), tol);
}

}  // namespace

Tolerance DefaultTolerance(at::ScalarType dtype, double atol_override, double rtol_override) {
  Tolerance t;
  bool low = dtype == at::kHalf || dtype == at::kBFloat16;
  t.atol = atol_override > 0 ? atol_override : (low ? 1e-2 : 1e-4);
  t.rtol = rtol_override > 0 ? rtol_override : (low ? 1e-2 : 1e-4);
  t.whole_rel = std::min(0.05, 100 * t.rtol);
  return t;
}

Comparison CompareOutputs(const std::vector<at::Tensor>& ref, const std::vector<at::Tensor>& cand,
                          const Tolerance& tol) {
  Comparison c;
  auto fail = [&](size_t i, const std::string& why) {
    c.ok = false;
    c.reason = "output " + std::to_string(i) + ": " + why;
    return c;
  };
  if (ref.size() != cand.size()) {
    c.ok = false;
    c.reason = "returned " + std::to_string(cand.size()) + " outputs, the reference " +
               std::to_string(ref.size());
    return c;
  }
  for (size_t i = 0; i < ref.size(); ++i) {
    const at::Tensor& r = ref[i];
    const at::Tensor& k = cand[i];
    if (!k.defined()) return fail(i, "is undefined");
    if (r.sizes() != k.sizes()) return fail(i, "shape " + Shape(k) + ", expected " + Shape(r));
    if (r.scalar_type() != k.scalar_type()) {
      return fail(i, std::string("dtype ") + c10::toString(k.scalar_type()) + ", expected " +
                         c10::toString(r.scalar_type()));
    }
    if (r.device() != k.device()) {
      return fail(i, "is on " + k.device().str() + ", expected " + r.device().str());
    }
    if (r.numel() == 0) continue;
    CompareAcc st = Compare(r, k, tol);
    if (st.nonfinite > 0) {
      return fail(i, std::to_string(static_cast<int64_t>(st.nonfinite)) + " of " +
                         std::to_string(r.numel()) +
                         " elements are NaN or Inf where the reference is finite "
                         "(unwritten or invalid results)");
    }
    if (st.mismatch > 0) return fail(i, "NaN/Inf positions differ from the reference");
    double diff_norm = std::sqrt(st.diff_sq), ref_norm = std::sqrt(st.ref_sq);
    double max_abs = st.max_abs, whole = ref_norm > 0 ? diff_norm / ref_norm : max_abs;
    c.max_abs_error = std::max(c.max_abs_error, max_abs);
    c.max_rel_error = std::max(c.max_rel_error, st.max_rel);
    c.whole_rel_error = std::max(c.whole_rel_error, whole);
    if (st.over > 0) {
      std::ostringstream s;
      s << static_cast<int64_t>(st.over) << " of " << r.numel()
        << " elements outside atol=" << tol.atol << " rtol=" << tol.rtol << " (max abs error "
        << max_abs << ")";
      return fail(i, s.str());
    }
    if (whole > tol.whole_rel) {
      std::ostringstream s;
      s << "relative error of the whole output " << whole << " exceeds " << tol.whole_rel
        << " (elementwise within tolerance only because values are tiny)";
      return fail(i, s.str());
    }
  }
  return c;
}

std::string CompareKernelSource(at::ScalarType type) {
  const char* ctype = KernelType(type);
  if (!ctype) {
    throw std::invalid_argument("kforge: no comparison kernel for " +
                                std::string(c10::toString(type)));
  }
  return std::string("#define KFORGE_COMPARE_HD __device__\n") + kCompareElementSource + "\n" +
         kCompareKernels + "KFORGE_COMPARE_KERNEL(kforge_compare, " + ctype + ")\n";
}

namespace {

// The architectures ("sm_90") named by `torch_arch_list`: entries separated by spaces or
// semicolons, as torch reads them ("9.0", "9.0+PTX", "8.6"); the digits before and after the
// dot (named architectures are left out).
std::vector<std::string> ArchesOf(const std::string& torch_arch_list) {
  std::vector<std::string> arches;
  std::string separated = torch_arch_list;
  std::replace(separated.begin(), separated.end(), ';', ' ');
  std::stringstream list(separated);
  std::string entry;
  while (list >> entry) {
    const size_t dot = entry.find('.');
    if (dot == std::string::npos || dot == 0) continue;
    std::string major = entry.substr(0, dot);
    std::string minor = entry.substr(dot + 1, 1);
    if (major.empty() || major.find_first_not_of("0123456789") != std::string::npos ||
        minor.empty() || !std::isdigit(static_cast<unsigned char>(minor[0]))) {
      continue;
    }
    arches.push_back("sm_" + major + minor);
  }
  return arches;
}

bool WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

int PrepareCompareKernels(const std::string& torch_arch_list) {
  const at::ScalarType kTypes[] = {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16};
  std::vector<std::pair<std::string, at::ScalarType>> todo;
  for (const std::string& arch : ArchesOf(torch_arch_list)) {
    for (at::ScalarType type : kTypes) {
      if (!PreparedKernels().count({arch, type}) &&
          std::find(todo.begin(), todo.end(), std::make_pair(arch, type)) == todo.end()) {
        todo.emplace_back(arch, type);
      }
    }
  }
  if (todo.empty()) return 0;
  // NVRTC runs in a child that exits, never in this process: every evaluation is forked from
  // here, and on the H200 (session 21, device call 1) every evaluation of a fork server that
  // had run NVRTC itself found no CUDA device. The child writes each cubin as an 8-byte size
  // and its bytes, in `todo`'s order (size 0: it did not compile).
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return 0;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return 0;
  }
  if (pid == 0) {
    close(fds[0]);
    try {
      for (const auto& [arch, type] : todo) {
        NvrtcCompileOutput nv = CompileCompareKernel(arch, type);
        uint64_t size = nv.ok ? nv.cubin.size() : 0;
        if (!WriteAll(fds[1], reinterpret_cast<const char*>(&size), sizeof size) ||
            !WriteAll(fds[1], nv.cubin.data(), size)) {
          _exit(1);
        }
      }
    } catch (...) {
      _exit(2);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr,
                 "kforge: the child compiling the comparison kernels ended with status %d; "
                 "the kernels it did not hand back are compiled when needed\n",
                 status);
  }
  int compiled = 0;
  size_t at = 0;
  for (const auto& key : todo) {
    uint64_t size = 0;
    if (out.size() - at < sizeof size) break;  // the child died before this one
    std::memcpy(&size, out.data() + at, sizeof size);
    at += sizeof size;
    if (out.size() - at < size) break;
    if (size > 0) {
      PreparedKernels()[key] = out.substr(at, size);
      ++compiled;
    }
    at += size;
  }
  return compiled;
}

bool HasPreparedCompareKernel(const std::string& arch, at::ScalarType type) {
  return PreparedKernels().count({arch, type}) > 0;
}

std::string PreparedCompareKernel(const std::string& arch, at::ScalarType type) {
  auto it = PreparedKernels().find({arch, type});
  return it == PreparedKernels().end() ? std::string() : it->second;
}

bool SharesMemory(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined() || !b.defined() || a.device() != b.device()) return false;
  if (!a.has_storage() || !b.has_storage()) return false;
  const char* a0 = static_cast<const char*>(a.storage().data());
  const char* b0 = static_cast<const char*>(b.storage().data());
  if (a0 == nullptr || b0 == nullptr) return false;
  const char* a1 = a0 + a.storage().nbytes();
  const char* b1 = b0 + b.storage().nbytes();
  return a0 < b1 && b0 < a1;
}

bool InDeviceMemory(const at::Tensor& t) {
  // Sparse and other storage-less outputs are left to the comparison's own checks.
  if (!t.is_cuda() || t.numel() == 0 || !t.has_storage()) return true;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, t.data_ptr()) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice && a.hostPointer == nullptr;
}

}  // namespace kforge::eval
