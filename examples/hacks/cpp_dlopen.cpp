// kforge: dialect=cpp
// Hack (cpp dialect): loads libcuda itself to launch work the engine does not count.
// Task: tasks/tiny/tiny_relu.py (the static rules fire before anything runs, on any device).
// Expected verdict: rejected, rule forbidden_include
#include <kforge/candidate.h>
#include <dlfcn.h>

KFORGE_KERNELS(R"(
extern "C" __global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
)")

std::vector<at::Tensor> forward(kforge::Context& ctx, const std::vector<at::Tensor>& inputs) {
  at::Tensor x = inputs[0].contiguous();
  at::Tensor y = at::empty_like(x);
  int64_t n = x.numel();
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  (void)lib;
  ctx.launch("relu_kernel", (n + 255) / 256, 256, 0, {x, y, n});
  return {y};
}
