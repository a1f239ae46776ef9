#include "coordinator/bench/dispatch_recorder.h"

#include <algorithm>

namespace kforge {
namespace {

double Ms(BenchClock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
double Seconds(BenchClock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

void DispatchRecorder::StartPhase(BenchClock::time_point start) {
  absl::MutexLock lock(&mu_);
  start_ = start;
  batches_.clear();
  waiting_ = 0;
  dry_spells_ = 0;
  result_sent_.clear();
  result_times_.clear();
  received_.clear();
  last_record_.reset();
  leases_ = duplicates_ = retried_ = not_ok_ = 0;
  turnaround_.clear();
  idle_turnaround_.clear();
  queue_wait_.clear();
  enqueue_.clear();
  result_to_client_.clear();
  phase_.fetch_add(1);
}

void DispatchRecorder::BatchSubmitted(int batch, int evaluations, BenchClock::time_point t) {
  absl::MutexLock lock(&mu_);
  Batch& b = batches_[batch];
  b.submitted = t;
  b.evaluations = evaluations;
}

void DispatchRecorder::BatchEnqueued(int batch, BenchClock::time_point t) {
  absl::MutexLock lock(&mu_);
  auto it = batches_.find(batch);
  if (it == batches_.end() || it->second.committed) return;
  it->second.committed = true;
  // Leases of a batch can beat its batch id to the client.
  waiting_ += std::max(0, it->second.evaluations - it->second.leased);
  enqueue_.push_back(Ms(t - it->second.submitted));
}

void DispatchRecorder::LeaseArrived(int batch, std::optional<SentResult> previous_result,
                                    BenchClock::time_point t) {
  absl::MutexLock lock(&mu_);
  ++leases_;
  if (previous_result) {
    bool queued_throughout =
        previous_result->work_queued && previous_result->dry_spells == dry_spells_;
    (queued_throughout ? turnaround_ : idle_turnaround_).push_back(Ms(t - previous_result->at));
  }
  auto it = batches_.find(batch);
  if (it == batches_.end()) return;
  ++it->second.leased;
  if (it->second.committed && waiting_ > 0 && --waiting_ == 0) ++dry_spells_;
  queue_wait_.push_back(Ms(t - it->second.submitted));
}

DispatchRecorder::SentResult DispatchRecorder::ResultSent(int64_t evaluation_id,
                                                          BenchClock::time_point t) {
  absl::MutexLock lock(&mu_);
  result_sent_[evaluation_id] = t;
  result_times_.push_back(t);
  return SentResult{t, waiting_ > 0, dry_spells_};
}

void DispatchRecorder::RecordReceived(int64_t evaluation_id, uint32_t attempts, bool ok,
                                      BenchClock::time_point t) {
  absl::MutexLock lock(&mu_);
  if (!received_.insert(evaluation_id).second) {
    ++duplicates_;
    return;
  }
  if (attempts > 1) ++retried_;
  if (!ok) ++not_ok_;
  last_record_ = t;
  auto it = result_sent_.find(evaluation_id);
  if (it != result_sent_.end()) result_to_client_.push_back(Ms(t - it->second));
}

int64_t DispatchRecorder::records() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(received_.size());
}

DispatchReport DispatchRecorder::Report() const {
  absl::MutexLock lock(&mu_);
  DispatchReport r;
  r.leases = leases_;
  r.results_sent = static_cast<int64_t>(result_times_.size());
  r.records = static_cast<int64_t>(received_.size());
  r.duplicate_records = duplicates_;
  r.retried = retried_;
  r.not_ok = not_ok_;
  if (last_record_) r.elapsed_s = Seconds(*last_record_ - start_);
  if (!result_times_.empty()) {
    std::vector<BenchClock::time_point> times = result_times_;
    std::sort(times.begin(), times.end());
    r.results_elapsed_s = Seconds(times.back() - start_);
    // The middle 80% of results: neither the ramp-up while the first batch is being enqueued
    // nor the tail when fewer evaluations than slots remain.
    size_t lo = times.size() / 10, hi = times.size() * 9 / 10;
    if (hi > lo + 1 && times[hi - 1] > times[lo]) {
      r.steady_evals_per_s = static_cast<double>(hi - 1 - lo) / Seconds(times[hi - 1] - times[lo]);
    }
  }
  r.turnaround = Summarize(turnaround_);
  r.idle_turnaround = Summarize(idle_turnaround_);
  r.queue_wait = Summarize(queue_wait_);
  r.enqueue = Summarize(enqueue_);
  r.result_to_client = Summarize(result_to_client_);
  return r;
}

}  // namespace kforge
