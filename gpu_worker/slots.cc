#include "gpu_worker/slots.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>

#include "common/base/log.h"
#include "common/result_json.h"

namespace kforge {

void ObserveStages(const v1::EvalResult& r, prometheus::Family<prometheus::Histogram>& stages) {
  const auto& st = r.stages();
  for (auto [name, value] : {std::pair<const char*, double>{"startup", st.startup_s()},
                             {"build", st.build_s()},
                             {"correctness", st.correctness_s()},
                             {"timing", st.timing_s()}}) {
    if (value > 0) stages.Add({{"stage", name}}, StageBuckets()).Observe(value);
  }
}

const prometheus::Histogram::BucketBoundaries& StageBuckets() {
  static const prometheus::Histogram::BucketBoundaries buckets{0.01, 0.05, 0.1, 0.3, 1,
                                                               3,    10,   30,  100};
  return buckets;
}

Slots::Slots(LeaseQueue& leases, Evaluator& evaluator, ResultWriter& writer,
             std::vector<std::string> devices, prometheus::Registry& metrics,
             prometheus::Family<prometheus::Counter>& evaluations, SlotMetrics* slot_metrics)
    : leases_(leases),
      evaluator_(evaluator),
      writer_(writer),
      devices_(std::move(devices)),
      evaluations_(evaluations),
      slot_metrics_(slot_metrics),
      busy_(prometheus::BuildGauge()
                .Name("kforge_worker_slots_busy")
                .Help("Slots running an evaluation")
                .Register(metrics)
                .Add({})),
      duration_(prometheus::BuildHistogram()
                    .Name("kforge_worker_evaluation_seconds")
                    .Help("Wall time of one evaluation child")
                    .Register(metrics)
                    .Add({}, prometheus::Histogram::BucketBoundaries{0.5, 1, 2, 5, 10, 30, 60, 120,
                                                                     300, 600})),
      gpu_retries_(prometheus::BuildCounter()
                       .Name("kforge_worker_gpu_unavailable_retries_total")
                       .Help("Evaluations tried again because the slot's GPU was unavailable "
                             "(no CUDA device, or no turn on it)")
                       .Register(metrics)
                       .Add({})),
      stages_(prometheus::BuildHistogram()
                  .Name("kforge_worker_stage_seconds")
                  .Help("Engine stage durations (startup, build, correctness, timing)")
                  .Register(metrics)) {}

Slots::~Slots() { Join(); }

void Slots::Start() {
  for (int slot = 0; slot < static_cast<int>(devices_.size()); ++slot) {
    threads_.emplace_back([this, slot] { RunSlot(slot); });
  }
}

void Slots::Join() {
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void Slots::RunSlot(int slot) {
  using Clock = std::chrono::steady_clock;
  const std::string& device = devices_[static_cast<size_t>(slot)];
  while (std::optional<LeaseQueue::SlotWork> work = leases_.TakeForSlot()) {
    const v1::Lease& lease = work->lease;
    busy_.Increment();
    if (slot_metrics_) slot_metrics_->Begin(slot);
    LogInfo("evaluation started", {{"lease_id", lease.lease_id()},
                                   {"evaluation_id", lease.evaluation_id()},
                                   {"slot", std::to_string(slot)},
                                   {"device", device},
                                   {"built_ahead", work->built_ahead ? "true" : "false"}});
    auto t0 = Clock::now();
    v1::EvalResult result = Evaluate(lease, device);
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    duration_.Observe(secs);
    ObserveStages(result, stages_);
    busy_.Decrement();
    if (slot_metrics_) slot_metrics_->End(slot);
    LogInfo("evaluation done", {{"lease_id", lease.lease_id()},
                                {"evaluation_id", lease.evaluation_id()},
                                {"slot", std::to_string(slot)},
                                {"device", device},
                                {"verdict", VerdictName(result.verdict())},
                                {"seconds", std::to_string(secs)}});
    evaluations_.Add({{"verdict", VerdictName(result.verdict())}}).Increment();
    leases_.Answer(lease.lease_id(), std::move(result), writer_);
  }
}

namespace {

// The engine's own findings, before any candidate code ran: no CUDA device (an MPS server
// recovering from another client's fault), or no GPU turn within --gpu-wait-s (the other lanes'
// evaluations held the GPU that long). Neither is the candidate's.
bool GpuWasUnavailable(const v1::EvalResult& result) {
  return result.rule() == "gpu_unavailable" || result.rule() == "gpu_turn_timeout";
}

}  // namespace

v1::EvalResult Slots::Evaluate(const v1::Lease& lease, const std::string& device) {
  v1::EvalResult result = evaluator_.Evaluate(lease.request(), device, nullptr);
  if (device == "cpu") return result;
  double waited_s = 0;
  size_t tries = 1;
  for (double delay : no_gpu_retry_delays_s_) {
    if (!GpuWasUnavailable(result)) return result;
    LogWarning("the slot's GPU was not available; trying the evaluation again",
               {{"lease_id", lease.lease_id()},
                {"device", device},
                {"reason", result.reason()},
                {"in_s", std::to_string(delay)}});
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    waited_s += delay;
    ++tries;
    gpu_retries_.Increment();
    result = evaluator_.Evaluate(lease.request(), device, nullptr);
  }
  if (GpuWasUnavailable(result) && tries > 1) {
    char waited[32];
    std::snprintf(waited, sizeof waited, "%.1f", waited_s);
    result.set_reason(result.reason() + " [the slot's GPU was unavailable in " +
                      std::to_string(tries) + " tries over " + waited + " s]");
  }
  return result;
}

}  // namespace kforge
