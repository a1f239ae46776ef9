#include "gpu_worker/eval/cuda_driver.h"

#include <cuda_runtime_api.h>

#include <stdexcept>

namespace kforge::eval {
namespace {

template <typename F>
void Resolve(const char* name, F* out) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12040, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess || fn == nullptr) {
    cudaGetLastError();
    throw std::runtime_error(std::string("kforge: driver function ") + name + " is unavailable");
  }
  *out = reinterpret_cast<F>(fn);
}

}  // namespace

const CudaDriver& GetDriver() {
  static const CudaDriver driver = [] {
    CudaDriver d;
    Resolve("cuModuleLoadData", &d.module_load_data);
    Resolve("cuModuleUnload", &d.module_unload);
    Resolve("cuModuleGetFunction", &d.module_get_function);
    Resolve("cuFuncGetParamInfo", &d.func_get_param_info);
    Resolve("cuFuncSetAttribute", &d.func_set_attribute);
    Resolve("cuLaunchKernel", &d.launch_kernel);
    Resolve("cuOccupancyMaxActiveBlocksPerMultiprocessor", &d.occupancy_max_blocks);
    Resolve("cuGetErrorString", &d.get_error_string);
    return d;
  }();
  return driver;
}

void CheckCu(CUresult r, const std::string& what) {
  if (r == CUDA_SUCCESS) return;
  const char* msg = nullptr;
  GetDriver().get_error_string(r, &msg);
  throw std::runtime_error("kforge: " + what + " failed: " + (msg ? msg : "unknown error") +
                           " (CUresult " + std::to_string(static_cast<int>(r)) + ")");
}

}  // namespace kforge::eval
