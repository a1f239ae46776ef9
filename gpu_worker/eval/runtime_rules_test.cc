// The runtime rules on CPU tensors: each rule fires on the trick it names, with its rule id and
// a reason that says where, and stays silent on honest outputs that look alike.
#include "gpu_worker/eval/runtime_rules.h"

#include <ATen/ATen.h>

#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"

namespace kforge::eval {
namespace {

// Every byte 0xff, as the engine poisons output slots before a call.
at::Tensor Poisoned(int64_t n, at::ScalarType type) {
  at::Tensor t = at::empty({n}, at::TensorOptions().dtype(type));
  t.view(at::kByte).fill_(0xff);
  return t;
}

// `v` is a rejection by `rule` with exactly `reason`.
void ExpectRejected(const std::optional<Verdict>& v, const std::string& rule,
                    const std::string& reason) {
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->verdict, v1::VERDICT_REJECTED);
  EXPECT_EQ(v->rule, rule);
  EXPECT_EQ(v->reason, reason);
}

TEST(RuntimeRulesTest, PoisonIsSeenInEveryFloatWidthUntilEveryElementIsWritten) {
  for (at::ScalarType type : {at::kHalf, at::kBFloat16, at::kFloat, at::kDouble}) {
    at::Tensor out = Poisoned(8, type);
    EXPECT_TRUE(HoldsPoison(out)) << type;
    out.slice(0, 0, 7).fill_(1.0);  // one element left unwritten
    EXPECT_TRUE(HoldsPoison(out)) << type;
    out.fill_(1.0);
    EXPECT_FALSE(HoldsPoison(out)) << type;
  }
}

TEST(RuntimeRulesTest, AComputedNanIsNotPoison) {
  at::Tensor out = at::full({4}, std::numeric_limits<float>::quiet_NaN());
  EXPECT_FALSE(HoldsPoison(out));
  EXPECT_FALSE(StaleMemory(out, 0, "").has_value());
  // Integer outputs are never poisoned (the comparison checks them exactly).
  EXPECT_FALSE(HoldsPoison(at::full({4}, -1, at::TensorOptions().dtype(at::kInt))));
}

TEST(RuntimeRulesTest, StaleMemoryNamesTheOutputAndWhere) {
  auto v = StaleMemory(Poisoned(4, at::kFloat), 2, "in iteration 3 of the timing stage, ");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->verdict, v1::VERDICT_REJECTED);
  EXPECT_EQ(v->rule, "stale_memory");
  EXPECT_EQ(v->reason.rfind("stale_memory: in iteration 3 of the timing stage, output 2 ", 0), 0u)
      << v->reason;
}

TEST(RuntimeRulesTest, ReturningAnInputOrAViewOfItIsRefused) {
  at::Tensor x = at::rand({16});
  std::vector<at::Tensor> in = {x};
  // The reference's output is fresh memory: no aliasing is allowed to the candidate.
  const std::vector<uint64_t> bits = AliasBits({at::relu(x)}, in);
  ASSERT_EQ(bits, std::vector<uint64_t>{0});
  const std::vector<bool> ref_aliases = {false};
  auto v = ReturnsInput(ref_aliases, 1, {x.slice(0, 4, 8)}, in, "");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->rule, "returns_input");
  EXPECT_EQ(v->reason, "returns_input: output 0 shares memory with input 0");
  EXPECT_FALSE(ReturnsInput(ref_aliases, 1, {at::relu(x)}, in, "").has_value());
}

TEST(RuntimeRulesTest, AnInPlaceTaskMayReturnItsInput) {
  // A task whose reference returns its input modified in place (x.relu_()) lets the candidate
  // do the same: the alias bits say which outputs may share memory with which inputs.
  at::Tensor x = at::rand({16});
  const std::vector<uint64_t> bits = AliasBits({x}, {x});
  ASSERT_EQ(bits, std::vector<uint64_t>{1});
  at::Tensor y = at::rand({16});
  EXPECT_FALSE(ReturnsInput({true}, 1, {y}, {y}, "").has_value());
}

TEST(RuntimeRulesTest, AliasBitsAreOnePerInput) {
  at::Tensor a = at::rand({4}), b = at::rand({4}), c = at::rand({4});
  const std::vector<uint64_t> bits = AliasBits({b, at::rand({4}), c.view({2, 2})}, {a, b, c});
  EXPECT_EQ(bits, (std::vector<uint64_t>{0b010, 0, 0b100}));
}

TEST(RuntimeRulesTest, MemoryReturnedBeforeIsAnOutputCache) {
  at::Tensor first = at::rand({8});
  std::vector<at::Tensor> earlier = {first};
  auto v = ReusedOutput(first.slice(0, 2, 4), 1, earlier, "");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->rule, "output_cache");
  EXPECT_EQ(v->reason,
            "output_cache: output 1 is the same memory the candidate returned for earlier inputs");
  EXPECT_FALSE(ReusedOutput(at::rand({8}), 0, earlier, "").has_value());
  EXPECT_FALSE(ReusedOutput(first, 0, {}, "").has_value());
}

TEST(RuntimeRulesTest, AChangedInputIsAnInputMutationEvenByOneElement) {
  at::Tensor ref = at::rand({32}), other = at::rand({3});
  at::Tensor cand = ref.clone();
  EXPECT_FALSE(ChangedInput({other, ref}, {other.clone(), cand}, "").has_value());
  cand[17] = cand[17].item<float>() + 1e-6f;
  auto v = ChangedInput({other, ref}, {other.clone(), cand}, "");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->rule, "input_mutation");
  EXPECT_EQ(v->reason, "input_mutation: input 1 was modified by the candidate");
}

TEST(RuntimeRulesTest, HostTensorsAreNotJudgedAsDeviceOutputs) {
  // CPU mode's outputs live in host memory by design: the rule is about CUDA tensors whose
  // memory is not device memory, which needs a GPU (the GPU suite's hacks/host_memory_output).
  EXPECT_FALSE(HostMemory(at::rand({4}), 0, "").has_value());
}

TEST(RuntimeRulesTest, NoGpuWorkInEveryCallIsNoWork) {
  // 2_66 and 2_80 of CUDA-L1's corpus: a tensor made once and returned on every call (their
  // tasks' outputs do not depend on the inputs, so every comparison passes).
  ExpectRejected(NoWork(kNoWorkCalls, 0, kNoWorkCalls, "in the timing stage, "), "no_work",
                 "no_work: in the timing stage, the candidate's process recorded no GPU work (no "
                 "kernel, copy or memset) in any of its 8 calls while the reference's did: its "
                 "outputs were not computed from the call's inputs (kept from an earlier call, or "
                 "made once)");
}

TEST(RuntimeRulesTest, OneCallWithGpuWorkOrTooFewCallsIsNotNoWork) {
  // A candidate that computes on some calls and returns a kept result on others is judged by
  // its outputs (fresh inputs each call), not by this rule.
  EXPECT_FALSE(NoWork(100, 1, 100, "").has_value());
  EXPECT_FALSE(NoWork(kNoWorkCalls - 1, 0, 100, "").has_value());
  // A reference that records no GPU work either (a view, a host computation): nothing to
  // compare with.
  EXPECT_FALSE(NoWork(100, 0, kNoWorkCalls - 1, "").has_value());
}

TEST(RuntimeRulesTest, AFailedBuildTheCandidateWentOnWithoutIsFallback) {
  // 21 of CUDA-L1's released candidates: load_inline fails as written, the except swallows it,
  // and PyTorch runs on every call.
  const Verdict expected{v1::VERDICT_REJECTED,
                         "fallback: 1 kernel build of the candidate failed and it went on "
                         "without it (load_inline('relu_ext'): main.cpp:3:5: error: 'relu' was "
                         "not declared): what ran is not a kernel of its own",
                         "fallback"};
  auto v = FailedBuild(1, 0,
                       "load_inline('relu_ext'): main.cpp:3:5: error: 'relu' was not declared", "");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(std::tie(v->verdict, v->reason, v->rule),
            std::tie(expected.verdict, expected.reason, expected.rule));
  auto w = FailedBuild(2, 0, "load('x'): e", "in the correctness trials, ");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->reason.rfind("fallback: in the correctness trials, 2 kernel builds", 0), 0u)
      << w->reason;
}

TEST(RuntimeRulesTest, NoFailedBuildOrASecondVariantThatBuiltIsNotFallback) {
  EXPECT_FALSE(FailedBuild(0, 0, "", "").has_value());
  EXPECT_FALSE(FailedBuild(0, 3, "", "").has_value());
  // A first variant that does not build, then a second that does: judged by its outputs.
  EXPECT_FALSE(FailedBuild(1, 1, "load_inline('a'): e", "").has_value());
}

TEST(RuntimeRulesTest, ACallThatLaunchedNoneOfTheCandidatesKernelsIsFallback) {
  // CUDA-L1's 1_22: cupy imports, its kernel path fails inside an except, torch's tanh runs.
  ExpectRejected(UnlaunchedKernels({"tanh_kernel", "tanh_kernel_simple"},
                                   {"_ZN2at6native29vectorized_elementwise_kernelILi4E"},
                                   "in iteration 3 of the timing stage, "),
                 "fallback",
                 "fallback: in iteration 3 of the timing stage, the candidate's forward launched "
                 "none of the kernels its source defines (tanh_kernel, tanh_kernel_simple), only "
                 "_ZN2at6native29vectorized_elementwise_kernelILi4E: what ran is not a kernel of "
                 "its own");
  auto many = UnlaunchedKernels({"a", "b", "c", "d", "e"}, {"k1", "k2", "k3", "k4", "k5"}, "");
  ASSERT_TRUE(many.has_value());
  EXPECT_NE(many->reason.find("(a, b, c, d, ...), only k1, k2, k3, k4, ...:"), std::string::npos)
      << many->reason;
  // A candidate that defines no kernel is not held to launching one.
  EXPECT_FALSE(UnlaunchedKernels({}, {"k1"}, "").has_value());
}

}  // namespace
}  // namespace kforge::eval
