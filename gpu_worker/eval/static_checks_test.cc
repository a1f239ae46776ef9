#include "gpu_worker/eval/static_checks.h"

#include "common/result_json.h"
#include "gtest/gtest.h"

namespace kforge::eval {
namespace {

constexpr char kNvrtc[] = R"py(# kforge: dialect=nvrtc
import torch
from kforge import cuda
SRC = r'''
extern "C" __global__ void k(float* x) { /* try: open( eval( import os */ }
'''
mod = cuda.compile(SRC)
class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x
)py";

TEST(StaticChecksTest, InfersDialects) {
  EXPECT_EQ(InferDialect(kNvrtc), v1::DIALECT_NVRTC);
  EXPECT_EQ(InferDialect("from torch.utils.cpp_extension import load_inline\nclass ModelNew: pass"),
            v1::DIALECT_KERNELBENCH);
  EXPECT_EQ(InferDialect("#include <torch/extension.h>\ntorch::Tensor forward();"),
            v1::DIALECT_CPP);
  EXPECT_EQ(InferDialect("import torch\nclass ModelNew: pass"), v1::DIALECT_KERNELBENCH);
}

TEST(StaticChecksTest, KernelSourceAndCudaCompileAreNotFlagged) {
  EXPECT_FALSE(CheckCandidateSource(kNvrtc, v1::DIALECT_NVRTC).fired());
}

struct Case {
  const char* line;
  const char* rule;
};

TEST(StaticChecksTest, EachRuleFiresWithItsLine) {
  const Case cases[] = {
      {"import ctypes", "forbidden_import"},
      {"from os import fork", "forbidden_import"},
      {"import torch, gc", "forbidden_import"},
      {"x = __import__('os')", "forbidden_call"},
      {"data = open('/etc/shadow').read()", "forbidden_call"},
      {"torch.allclose = lambda *a, **k: True", "forbidden_call"},
      {"setattr(torch, 'allclose', None)", "forbidden_call"},
      {"t = ().__class__.__bases__[0].__subclasses__()", "forbidden_call"},
      {"torch.backends.cuda.matmul.allow_tf32 = True", "global_switch"},
      {"torch.set_float32_matmul_precision('medium')", "global_switch"},
      {"s = torch.cuda.Stream()", "side_stream"},
      {"try:", "try_except"},
  };
  for (const Case& c : cases) {
    std::string src = std::string("import torch\n") + c.line + "\nclass ModelNew: pass\n";
    RuleViolation v = CheckCandidateSource(src, v1::DIALECT_KERNELBENCH);
    EXPECT_EQ(v.rule, c.rule) << c.line;
    EXPECT_NE(v.reason.find("line 2"), std::string::npos) << v.reason;
  }
}

TEST(StaticChecksTest, MissingModelNew) {
  RuleViolation v = CheckCandidateSource("import torch\nclass Model: pass\n",
                                         v1::DIALECT_KERNELBENCH);
  EXPECT_EQ(v.rule, "missing_model");
}

TEST(ResultJsonTest, SnakeCaseWordsAndNullSpeedupRoundTrip) {
  v1::EvalResult r;
  r.set_verdict(v1::VERDICT_REJECTED);
  r.set_rule("side_stream");
  r.set_reason("reason mentions \"ok\" and VERDICT_OK");
  r.set_dialect(v1::DIALECT_NVRTC);
  std::string json = ResultToJson(r);
  EXPECT_NE(json.find("\"verdict\": \"rejected\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"dialect\": \"nvrtc\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"speedup\": null"), std::string::npos) << json;
  v1::EvalResult back;
  std::string error;
  ASSERT_TRUE(ResultFromJson(json, &back, &error)) << error;
  EXPECT_EQ(back.verdict(), v1::VERDICT_REJECTED);
  EXPECT_EQ(back.reason(), r.reason());
  EXPECT_FALSE(back.has_speedup());

  r.set_verdict(v1::VERDICT_OK);
  r.set_speedup(2.5);
  ASSERT_TRUE(ResultFromJson(ResultToJson(r), &back, &error)) << error;
  EXPECT_EQ(back.verdict(), v1::VERDICT_OK);
  EXPECT_DOUBLE_EQ(back.speedup(), 2.5);
}

}  // namespace
}  // namespace kforge::eval
