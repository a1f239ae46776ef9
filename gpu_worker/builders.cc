#include "gpu_worker/builders.h"

#include <chrono>
#include <utility>

#include "common/base/log.h"
#include "common/result_json.h"
#include "gpu_worker/slots.h"

namespace kforge {

bool IsFinalBuildResult(const v1::EvalResult& result) {
  return result.verdict() == v1::VERDICT_COMPILE_ERROR ||
         (result.verdict() == v1::VERDICT_REJECTED && result.stage().empty());
}

Builders::Builders(int count, std::string arch, LeaseQueue& leases, Evaluator& evaluator,
                   ResultWriter& writer, const std::atomic<bool>& cancel,
                   prometheus::Registry& metrics,
                   prometheus::Family<prometheus::Counter>& evaluations)
    : count_(count),
      arch_(std::move(arch)),
      leases_(leases),
      evaluator_(evaluator),
      writer_(writer),
      cancel_(cancel),
      evaluations_(evaluations),
      builds_(prometheus::BuildCounter()
                  .Name("kforge_worker_builds_ahead_total")
                  .Help("Builds ahead of the slots, by outcome (built, the final verdict, or "
                        "cancelled by a drain)")
                  .Register(metrics)),
      build_seconds_(prometheus::BuildHistogram()
                         .Name("kforge_worker_build_ahead_seconds")
                         .Help("Wall time of one build ahead")
                         .Register(metrics)
                         .Add({}, StageBuckets())) {
  if (count_ > 0) {  // exported from the start: dashboards read 0, not "no data"
    for (const char* outcome : {"built", "compile_error", "rejected", "cancelled"}) {
      builds_.Add({{"outcome", outcome}});
    }
  }
}

Builders::~Builders() { Join(); }

void Builders::Start() {
  for (int b = 0; b < count_; ++b) threads_.emplace_back([this] { RunBuilder(); });
}

void Builders::Join() {
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void Builders::RunBuilder() {
  using Clock = std::chrono::steady_clock;
  while (std::optional<v1::Lease> lease = leases_.TakeForBuild()) {
    LogInfo("build ahead started",
            {{"lease_id", lease->lease_id()}, {"evaluation_id", lease->evaluation_id()}});
    v1::EvalRequest request = lease->request();
    request.set_build_only(true);
    request.set_arch(arch_);
    auto t0 = Clock::now();
    v1::EvalResult result = evaluator_.Evaluate(std::move(request), "cpu", &cancel_);
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    if (result.rule() == "cancelled") {
      builds_.Add({{"outcome", "cancelled"}}).Increment();
      LogInfo("build ahead cancelled", {{"lease_id", lease->lease_id()},
                                        {"evaluation_id", lease->evaluation_id()},
                                        {"seconds", std::to_string(secs)}});
      continue;
    }
    build_seconds_.Observe(secs);
    const bool final = IsFinalBuildResult(result);
    const char* outcome = final ? VerdictName(result.verdict()) : "built";
    builds_.Add({{"outcome", outcome}}).Increment();
    LogInfo("build ahead done", {{"lease_id", lease->lease_id()},
                                 {"evaluation_id", lease->evaluation_id()},
                                 {"outcome", outcome},
                                 {"seconds", std::to_string(secs)}});
    if (leases_.FinishBuild(lease->lease_id(), final)) {
      evaluations_.Add({{"verdict", VerdictName(result.verdict())}}).Increment();
      leases_.Answer(lease->lease_id(), std::move(result), writer_);
    }
  }
}

}  // namespace kforge
