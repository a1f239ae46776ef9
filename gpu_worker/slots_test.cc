// The slots with a fake evaluator: each lease runs once on a slot's device and its result is
// answered; a built lease reaches the slots first.
#include "gpu_worker/slots.h"

#include <atomic>
#include <set>

#include "gmock/gmock.h"
#include "gpu_worker/fake_evaluator.h"
#include "gpu_worker/fake_result_writer.h"
#include "gtest/gtest.h"

namespace kforge {
namespace {

using ::testing::UnorderedElementsAre;

v1::Lease LeaseOf(const std::string& id) {
  v1::Lease l;
  l.set_lease_id(id);
  l.mutable_request()->set_candidate_source(id);
  return l;
}

TEST(SlotsTest, EachLeaseRunsOnceOnASlotDeviceAndIsAnswered) {
  LeaseQueue leases(2);
  FakeEvaluator evaluator;
  evaluator.answer = [](const v1::EvalRequest& req) {
    v1::EvalResult r;
    r.set_verdict(v1::VERDICT_INCORRECT);
    r.set_reason(req.candidate_source());
    return r;
  };
  FakeResultWriter writer;
  prometheus::Registry registry;
  auto& evaluations = prometheus::BuildCounter().Name("evaluations").Register(registry);
  Slots slots(leases, evaluator, writer, {"cuda:0", "cuda:1"}, registry, evaluations, nullptr);
  slots.Start();
  for (const char* id : {"a", "b", "c"}) leases.Add(LeaseOf(id));
  ASSERT_TRUE(writer.AwaitCount(3));
  leases.Close();
  slots.Join();

  std::set<std::string> answered;
  for (const auto& m : writer.written()) {
    EXPECT_EQ(m.result().result().reason(), m.result().lease_id());
    answered.insert(m.result().lease_id());
  }
  EXPECT_THAT(answered, UnorderedElementsAre("a", "b", "c"));
  for (const auto& call : evaluator.calls()) {
    EXPECT_TRUE(call.device == "cuda:0" || call.device == "cuda:1") << call.device;
    EXPECT_FALSE(call.request.build_only());
  }
  EXPECT_EQ(evaluator.calls().size(), 3u);
  EXPECT_EQ(evaluations.Add({{"verdict", "incorrect"}}).Value(), 3);
  EXPECT_TRUE(leases.Idle());
}

v1::EvalResult NoGpu() {
  v1::EvalResult r;
  r.set_verdict(v1::VERDICT_RUNTIME_ERROR);
  r.set_rule("no_gpu");
  r.set_reason("no CUDA device is available (cudaErrorMpsServerNotReady; ...)");
  return r;
}

TEST(SlotsTest, AGpuSlotTriesAgainWhileItsGpuIsUnavailable) {
  // As an MPS server recovering from another client's fault answers new contexts for a while:
  // the engine's no_gpu comes before any candidate code runs, so the candidate is not to blame.
  LeaseQueue leases(1);
  FakeEvaluator evaluator;
  std::atomic<int> n{0};
  evaluator.answer = [&](const v1::EvalRequest&) {
    if (++n <= 2) return NoGpu();
    v1::EvalResult r;
    r.set_verdict(v1::VERDICT_OK);
    return r;
  };
  FakeResultWriter writer;
  prometheus::Registry registry;
  auto& evaluations = prometheus::BuildCounter().Name("evaluations").Register(registry);
  Slots slots(leases, evaluator, writer, {"cuda:0"}, registry, evaluations, nullptr);
  slots.set_no_gpu_retry_delays_s({0.01, 0.01, 0.01});
  slots.Start();
  leases.Add(LeaseOf("a"));
  ASSERT_TRUE(writer.AwaitCount(1));
  leases.Close();
  slots.Join();
  ASSERT_EQ(writer.written().size(), 1u);
  EXPECT_EQ(writer.written()[0].result().result().verdict(), v1::VERDICT_OK);
  EXPECT_EQ(evaluator.calls().size(), 3u);
}

TEST(SlotsTest, AGpuThatStaysUnavailableIsAnsweredSayingSo) {
  LeaseQueue leases(2);
  FakeEvaluator evaluator;
  evaluator.answer = [](const v1::EvalRequest&) { return NoGpu(); };
  FakeResultWriter writer;
  prometheus::Registry registry;
  auto& evaluations = prometheus::BuildCounter().Name("evaluations").Register(registry);
  // Slot 1 is a CPU slot: no_gpu there is the candidate's (a kernel launch in CPU mode), once.
  Slots slots(leases, evaluator, writer, {"cuda:0", "cpu"}, registry, evaluations, nullptr);
  slots.set_no_gpu_retry_delays_s({0.01, 0.01});
  slots.Start();
  leases.Add(LeaseOf("a"));
  leases.Add(LeaseOf("b"));
  ASSERT_TRUE(writer.AwaitCount(2));
  leases.Close();
  slots.Join();
  size_t gpu = 0, cpu = 0, said_so = 0;
  for (const auto& call : evaluator.calls()) ++(call.device == "cpu" ? cpu : gpu);
  for (const auto& m : writer.written()) {
    const v1::EvalResult& r = m.result().result();
    EXPECT_EQ(r.rule(), "no_gpu");
    said_so += r.reason().find("[the slot's GPU was unavailable in 3 tries") != std::string::npos;
  }
  EXPECT_EQ(said_so, 1u) << "the GPU slot's answer says so, the CPU slot's does not";
  EXPECT_EQ(gpu, 3u);
  EXPECT_EQ(cpu, 1u);
}

}  // namespace
}  // namespace kforge
