// kforge: dialect=cpp
// Hack (cpp dialect): launches a token kernel on one element, then returns torch's own
// ReLU: the speedup would be PyTorch's. The runtime rule alone would pass it (a launch happened).
// Task: tasks/tiny/tiny_relu.py (the static rules fire before anything runs, on any device).
// Expected verdict: rejected, rule fallback
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
  ctx.launch("relu_kernel", 1, 1, 0, {x, y, int64_t{1}});
  y = at::relu(x);
  return {y};
}
