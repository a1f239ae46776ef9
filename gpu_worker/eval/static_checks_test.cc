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
      {"import torch.multiprocessing as mp", "forbidden_import"},
      {"p = torch.multiprocessing.Process(target=print)", "forbidden_import"},
      {"from concurrent.futures import ProcessPoolExecutor", "forbidden_import"},
      {"import asyncio", "forbidden_import"},
      {"import numpy, concurrent.futures", "forbidden_import"},
      {"from torch import nn, multiprocessing", "forbidden_import"},
      {"from torch import distributed as dist", "forbidden_import"},
      {"torch.distributed.init_process_group('gloo')", "forbidden_import"},
      {"x = __import__('os')", "forbidden_call"},
      {"data = open('/etc/shadow').read()", "forbidden_call"},
      {"torch.allclose = lambda *a, **k: True", "forbidden_call"},
      {"setattr(torch, 'allclose', None)", "forbidden_call"},
      {"t = ().__class__.__bases__[0].__subclasses__()", "forbidden_call"},
      {"torch.backends.cuda.matmul.allow_tf32 = True", "global_switch"},
      {"torch.set_float32_matmul_precision('medium')", "global_switch"},
      {"s = torch.cuda.Stream()", "side_stream"},
      {"with torch.profiler.profile() as p: pass", "forbidden_call"},
      {"from torch.autograd import profiler", "forbidden_call"},
      {"torch.autograd._enable_profiler()", "forbidden_call"},
      {"src = 'cudaLaunchHostFunc(s, f, 0);'", "forbidden_call"},
      {"cpp = 'std::thread t([] { launch(); });'", "forbidden_call"},
      {"blocks = torch.cuda.memory_snapshot()", "forbidden_call"},
      {"torch.cuda.memory._record_memory_history()", "forbidden_call"},
      {"cpp = 'auto s = c10::cuda::CUDACachingAllocator::snapshot();'", "forbidden_call"},
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

// A cpp candidate with kernels whose forward calls `call` (host code).
std::string CppWithKernels(const std::string& call) {
  return std::string(R"cc(// kforge: dialect=cpp
#include <kforge/candidate.h>
#include <vector>
KFORGE_KERNELS(R"(
extern "C" __global__ void k(float* y) { asm volatile("trap;"); /* std::thread fopen( */ }
)")
// std::thread in a comment, "system(" in a string:
static const char* kNote = "system( fork( getenv(";
std::vector<at::Tensor> forward(kforge::Context& ctx, const std::vector<at::Tensor>& in) {
  at::Tensor y = at::empty_like(in[0]);
  ctx.launch("k", 1, 1, 0, {y});
  )cc") + call + R"cc(
  return {y};
}
)cc";
}

constexpr char kConvTask[] = R"py(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self, c):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(c, c, 3)
    def forward(self, x):
        return self.conv(x).contiguous()
def get_inputs():
    return [torch.rand(1, 3, 8, 8)]
)py";

constexpr char kGemmReluTask[] = R"py(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gemm = nn.Linear(8, 8)
    def forward(self, x):
        return torch.relu(self.gemm(x))
)py";

TEST(StaticChecksTest, CppRulesSkipKernelsCommentsAndStrings) {
  RuleViolation v = CheckCandidateSource(CppWithKernels("y = y * 2;"), v1::DIALECT_CPP, kConvTask);
  EXPECT_FALSE(v.fired()) << v.reason;
}

TEST(StaticChecksTest, CppFallbackFiresOnTheSingleOpOfTheTask) {
  RuleViolation v =
      CheckCandidateSource(CppWithKernels("y = at::conv2d(in[0], in[1]);"), v1::DIALECT_CPP,
                           kConvTask);
  EXPECT_EQ(v.rule, "fallback") << v.reason;
  EXPECT_NE(v.reason.find("torch's own conv2d"), std::string::npos) << v.reason;
  // Several ops: keeping the GEMM in torch while fusing the rest is allowed.
  v = CheckCandidateSource(CppWithKernels("y = at::linear(in[0], in[1]);"), v1::DIALECT_CPP,
                           kGemmReluTask);
  EXPECT_FALSE(v.fired()) << v.reason;
}

TEST(StaticChecksTest, CppHostCodeRules) {
  EXPECT_EQ(CheckCandidateSource(CppWithKernels("std::thread t([] {});"), v1::DIALECT_CPP).rule,
            "forbidden_call");
  EXPECT_EQ(CheckCandidateSource(CppWithKernels("auto s = ::getenv(\"X\");"), v1::DIALECT_CPP)
                .rule,
            "forbidden_call");
  EXPECT_EQ(CheckCandidateSource(CppWithKernels("extern \"C\" int cuptiActivityDisable(int);"),
                                 v1::DIALECT_CPP)
                .rule,
            "forbidden_call");
  EXPECT_EQ(CheckCandidateSource(CppWithKernels("auto s = c10::cuda::CUDACachingAllocator::"
                                                "snapshot();"),
                                 v1::DIALECT_CPP)
                .rule,
            "forbidden_call");
  EXPECT_EQ(CheckCandidateSource(CppWithKernels("cudaStreamAddCallback(s, f, nullptr, 0);"),
                                 v1::DIALECT_CPP)
                .rule,
            "forbidden_call");
  EXPECT_FALSE(CheckCandidateSource(CppWithKernels("std::vector<int> v; v.erase(std::remove("
                                                   "v.begin(), v.end(), 1), v.end());"),
                                    v1::DIALECT_CPP)
                   .fired());
  EXPECT_EQ(CheckCandidateSource("#include <fstream>\n" + CppWithKernels(""), v1::DIALECT_CPP).rule,
            "forbidden_include");
}

}  // namespace
}  // namespace kforge::eval
