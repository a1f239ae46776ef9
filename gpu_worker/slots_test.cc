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

// The value of the unlabelled counter `name`, or -1 if there is none.
double CounterValue(prometheus::Registry& registry, const std::string& name) {
  for (const auto& family : registry.Collect()) {
    if (family.name == name && !family.metric.empty()) return family.metric[0].counter.value;
  }
  return -1;
}

v1::EvalResult NoGpu(const std::string& rule = "gpu_unavailable") {
  v1::EvalResult r;
  r.set_verdict(v1::VERDICT_RUNTIME_ERROR);
  r.set_rule(rule);
  r.set_reason("no CUDA device is available (cudaErrorMpsServerNotReady; ...)");
  return r;
}

class SlotsRetryTest : public ::testing::TestWithParam<std::string> {};

// gpu_unavailable: as an MPS server recovering from another client's fault answers new
// contexts for a while; gpu_turn_timeout: another lane held the GPU past --gpu-wait-s. Both
// come from the engine before any candidate code runs: not the candidate's.
TEST_P(SlotsRetryTest, AGpuSlotTriesAgainWhileItsGpuIsUnavailable) {
  LeaseQueue leases(1);
  FakeEvaluator evaluator;
  std::atomic<int> n{0};
  evaluator.answer = [&](const v1::EvalRequest&) {
    if (++n <= 2) return NoGpu(GetParam());
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
  EXPECT_EQ(CounterValue(registry, "kforge_worker_gpu_unavailable_retries_total"), 2);
}

INSTANTIATE_TEST_SUITE_P(EngineRules, SlotsRetryTest,
                         ::testing::Values("gpu_unavailable", "gpu_turn_timeout"));

TEST(SlotsTest, AGpuThatStaysUnavailableIsAnsweredSayingSo) {
  // A GPU slot tries 3 times and says so; a CPU slot tries once.
  for (const std::string device : {"cuda:0", "cpu"}) {
    LeaseQueue leases(1);
    FakeEvaluator evaluator;
    evaluator.answer = [](const v1::EvalRequest&) { return NoGpu(); };
    FakeResultWriter writer;
    prometheus::Registry registry;
    auto& evaluations = prometheus::BuildCounter().Name("evaluations").Register(registry);
    Slots slots(leases, evaluator, writer, {device}, registry, evaluations, nullptr);
    slots.set_no_gpu_retry_delays_s({0.01, 0.01});
    slots.Start();
    leases.Add(LeaseOf("a"));
    ASSERT_TRUE(writer.AwaitCount(1)) << device;
    leases.Close();
    slots.Join();
    const bool gpu = device != "cpu";
    EXPECT_EQ(evaluator.calls().size(), gpu ? 3u : 1u) << device;
    const v1::EvalResult r = writer.written()[0].result().result();
    EXPECT_EQ(r.rule(), "gpu_unavailable");
    EXPECT_EQ(r.reason().find("[the slot's GPU was unavailable in 3 tries over 0.0 s]") !=
                  std::string::npos,
              gpu)
        << device << ": " << r.reason();
  }
}

TEST(SlotsTest, ACandidatesOwnNoGpuIsNeverTriedAgain) {
  // Rule no_gpu can come from the candidate's process (an exception saying "no GPU (CPU mode)",
  // its own flag): retrying it would give a candidate a best of four, for free.
  LeaseQueue leases(1);
  FakeEvaluator evaluator;
  evaluator.answer = [](const v1::EvalRequest&) { return NoGpu("no_gpu"); };
  FakeResultWriter writer;
  prometheus::Registry registry;
  auto& evaluations = prometheus::BuildCounter().Name("evaluations").Register(registry);
  Slots slots(leases, evaluator, writer, {"cuda:0"}, registry, evaluations, nullptr);
  slots.set_no_gpu_retry_delays_s({0.01, 0.01});
  slots.Start();
  leases.Add(LeaseOf("a"));
  ASSERT_TRUE(writer.AwaitCount(1));
  leases.Close();
  slots.Join();
  EXPECT_EQ(evaluator.calls().size(), 1u);
  EXPECT_EQ(CounterValue(registry, "kforge_worker_gpu_unavailable_retries_total"), 0);
  EXPECT_EQ(writer.written()[0].result().result().reason().find("[the slot's GPU"),
            std::string::npos);
}

}  // namespace
}  // namespace kforge
