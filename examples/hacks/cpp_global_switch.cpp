// kforge: dialect=cpp
// Hack (cpp dialect): flips TF32 for the whole process, which also changes the reference.
// Task: tasks/tiny/tiny_relu.py (the static rules fire before anything runs, on any device).
// Expected verdict: rejected, rule global_switch
#include <kforge/candidate.h>

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
  at::globalContext().setAllowTF32CuBLAS(true);
  ctx.launch("relu_kernel", (n + 255) / 256, 256, 0, {x, y, n});
  return {y};
}
