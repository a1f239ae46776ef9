// kforge: dialect=cpp
// nn.Linear(64, 32) as one fused at::addmm (bias + x @ W^T), host code only: it runs on the
// CPU as well. init() keeps the reference's weights, given in state_dict order
// (linear.weight, linear.bias); the transposed weight is made contiguous once, untimed.
#include <kforge/candidate.h>

namespace {
at::Tensor weight_t;  // [in_features, out_features]
at::Tensor bias;      // [out_features]
}  // namespace

void init(kforge::Context& ctx, const std::vector<at::Tensor>& params) {
  TORCH_CHECK(params.size() == 2, "expects linear.weight and linear.bias, got ", params.size(),
              " tensors");
  weight_t = params[0].t().contiguous();
  bias = params[1];
}

std::vector<at::Tensor> forward(kforge::Context& ctx, const std::vector<at::Tensor>& inputs) {
  TORCH_CHECK(weight_t.defined(), "init was not called");
  const at::Tensor& x = inputs.at(0);
  std::vector<int64_t> out_shape = x.sizes().vec();
  out_shape.back() = weight_t.size(1);
  return {at::addmm(bias, x.reshape({-1, x.size(-1)}), weight_t).view(out_shape)};
}
