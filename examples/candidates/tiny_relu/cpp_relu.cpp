// kforge: dialect=cpp
// ReLU with one thread per element, launched from C++: the smallest complete cpp candidate.
// Needs a GPU to run (in CPU mode the kernel compiles, and the launch reports no GPU).
#include <kforge/candidate.h>

KFORGE_KERNELS(R"(
extern "C" __global__ void __launch_bounds__(1024)
relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
)")

// kforge: tunable BLOCK=256 choices=128,256,512,1024
constexpr int64_t BLOCK = 256;

std::vector<at::Tensor> forward(kforge::Context& ctx, const std::vector<at::Tensor>& inputs) {
  TORCH_CHECK(inputs.size() == 1 && inputs[0].scalar_type() == at::kFloat,
              "expects one float32 tensor");
  at::Tensor x = inputs[0].contiguous();
  at::Tensor y = at::empty_like(x);
  int64_t n = x.numel();
  if (n == 0) return {y};
  ctx.launch("relu_kernel", (n + BLOCK - 1) / BLOCK, BLOCK, 0, {x, y, n});
  return {y};
}
