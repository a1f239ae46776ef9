#include "gpu_worker/eval/library_warmup.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>

#include <chrono>
#include <cstdlib>
#include <exception>

namespace kforge::eval {

double WarmUpLibraries(int device, std::string* error) {
  if (const char* off = std::getenv("KFORGE_NO_LIBRARY_WARMUP"); off && *off) return -1;
  const auto start = std::chrono::steady_clock::now();
  try {
    const auto f32 = at::TensorOptions().dtype(at::kFloat).device(at::kCUDA, device);
    at::conv2d(at::ones({1, 3, 8, 8}, f32), at::ones({4, 3, 3, 3}, f32));
    at::conv_transpose3d(at::ones({1, 2, 4, 4, 4}, f32), at::ones({2, 2, 3, 3, 3}, f32));
    const at::Tensor a = at::ones({64, 64}, f32);
    at::matmul(a, a);
    at::linear(a, a, at::ones({64}, f32));  // with a bias: cuBLASLt's epilogue path
    c10::cuda::device_synchronize();
  } catch (const std::exception& e) {
    *error = e.what();
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace kforge::eval
