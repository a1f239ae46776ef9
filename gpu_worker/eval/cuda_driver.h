// The CUDA driver API functions the engine uses, resolved at run time through the runtime's
// cudaGetDriverEntryPointByVersion, so that kforge-eval starts on machines without a GPU
// driver (CPU mode): only the first use of a driver function needs one.
//
// Thread-safety: GetDriver() initialises once (thread-safe static) and is then read-only.
#ifndef KFORGE_GPU_WORKER_EVAL_CUDA_DRIVER_H_
#define KFORGE_GPU_WORKER_EVAL_CUDA_DRIVER_H_

#include <cuda.h>

#include <string>

namespace kforge::eval {

struct CudaDriver {
  decltype(&cuModuleLoadData) module_load_data = nullptr;
  decltype(&cuModuleUnload) module_unload = nullptr;
  decltype(&cuModuleGetFunction) module_get_function = nullptr;
  decltype(&cuFuncGetParamInfo) func_get_param_info = nullptr;
  decltype(&cuFuncSetAttribute) func_set_attribute = nullptr;
  decltype(&cuLaunchKernel) launch_kernel = nullptr;
  decltype(&cuOccupancyMaxActiveBlocksPerMultiprocessor) occupancy_max_blocks = nullptr;
  decltype(&cuGetErrorString) get_error_string = nullptr;
};

// Throws std::runtime_error naming the first function that is unavailable.
const CudaDriver& GetDriver();

// Throws std::runtime_error "kforge: <what> failed: <driver message> (CUresult N)" unless ok.
void CheckCu(CUresult result, const std::string& what);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_CUDA_DRIVER_H_
