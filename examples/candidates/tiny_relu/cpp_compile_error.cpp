// kforge: dialect=cpp
// Does not compile: line 9 calls a method at::Tensor does not have. The engine reports
// compile_error with the compiler's message for line 9 (the file is compiled as candidate.cpp).
#include <kforge/candidate.h>

std::vector<at::Tensor> forward(kforge::Context& ctx, const std::vector<at::Tensor>& inputs) {
  at::Tensor x = inputs[0];
  at::Tensor y = at::clamp_min(x, 0);
  return y.undefined_method();
}
