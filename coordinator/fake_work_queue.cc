#include "coordinator/fake_work_queue.h"

#include <algorithm>

namespace kforge {

absl::StatusOr<Leased> FakeWorkQueue::Lease(const LeaseRequest& request) {
  absl::MutexLock lock(&mu_);
  return LeaseLocked(request);
}

Leased FakeWorkQueue::LeaseLocked(const LeaseRequest& request) {
  Leased out;
  if (drained_.count(request.worker_id)) return out;
  for (auto it = queued_.begin();
       it != queued_.end() && static_cast<int>(out.grants.size()) < request.max_leases;) {
    Evaluation& e = evaluations_[*it];
    if (e.gpu_type != request.gpu_type && e.gpu_type != "any") {
      ++it;
      continue;
    }
    LeaseGrant g;
    g.lease_id = "lease-" + std::to_string(next_lease_++);
    g.evaluation_id = *it;
    g.attempt = ++e.attempts;
    g.task_name = "task";
    g.task_source = "task source";
    g.task_options_json = e.task_options_json;
    g.candidate_source = "candidate source";
    g.dialect = "kernelbench";
    leases_[g.lease_id] = {request.worker_id, *it, now_s_ + request.lease_timeout_s};
    out.grants.push_back(std::move(g));
    it = queued_.erase(it);
  }
  return out;
}

absl::Status FakeWorkQueue::Heartbeat(const std::string& worker_id,
                                      const std::vector<std::string>& lease_ids,
                                      double lease_timeout_s) {
  absl::MutexLock lock(&mu_);
  for (const auto& id : lease_ids) {
    auto it = leases_.find(id);
    if (it != leases_.end() && it->second.worker_id == worker_id) {
      it->second.deadline_s = now_s_ + lease_timeout_s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Completion> FakeWorkQueue::CompleteAndLease(const std::string& lease_id,
                                                           const v1::EvalResult& result,
                                                           const LeaseRequest& next) {
  absl::MutexLock lock(&mu_);
  ++completion_calls_;
  if (completion_failures_left_ > 0) {
    --completion_failures_left_;
    return completion_failure_;
  }
  Completion out;
  auto it = leases_.find(lease_id);
  if (it != leases_.end() && it->second.worker_id == next.worker_id) {
    evaluations_[it->second.evaluation_id].result = result;
    leases_.erase(it);
    out.stored = true;
    out.batch_id = "batch";
  }
  out.next = LeaseLocked(next);
  return out;
}

absl::StatusOr<std::string> FakeWorkQueue::Release(const std::string& lease_id,
                                                   const std::string& worker_id) {
  absl::MutexLock lock(&mu_);
  auto it = leases_.find(lease_id);
  if (it == leases_.end() || it->second.worker_id != worker_id) return std::string();
  const int64_t id = it->second.evaluation_id;
  leases_.erase(it);
  --evaluations_[id].attempts;
  RequeueLocked(id);
  return evaluations_[id].gpu_type;
}

absl::StatusOr<Refusal> FakeWorkQueue::Refuse(const std::string& lease_id,
                                              const std::string& worker_id,
                                              const std::string& reason) {
  absl::MutexLock lock(&mu_);
  Refusal out;
  auto it = leases_.find(lease_id);
  if (it == leases_.end() || it->second.worker_id != worker_id) return out;
  const int64_t id = it->second.evaluation_id;
  leases_.erase(it);
  Evaluation& e = evaluations_[id];
  if (e.attempts < kMaxAttempts) {
    RequeueLocked(id);
    out.requeued_gpu_type = e.gpu_type;
    return out;
  }
  v1::EvalResult ended;
  ended.set_verdict(v1::VERDICT_RUNTIME_ERROR);
  ended.set_rule("result_refused");
  ended.set_reason("result_refused: " + reason);
  e.result = ended;
  out.ended_batch_id = "batch";
  return out;
}

absl::StatusOr<std::map<std::string, int64_t>> FakeWorkQueue::ReleaseWorkerLeases(
    const std::string& worker_id) {
  absl::MutexLock lock(&mu_);
  std::map<std::string, int64_t> out;
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (it->second.worker_id != worker_id) {
      ++it;
      continue;
    }
    Evaluation& e = evaluations_[it->second.evaluation_id];
    --e.attempts;
    ++out[e.gpu_type];
    RequeueLocked(it->second.evaluation_id);
    it = leases_.erase(it);
  }
  return out;
}

absl::Status FakeWorkQueue::MarkWorker(const std::string& worker_id, const std::string& state) {
  absl::MutexLock lock(&mu_);
  worker_states_[worker_id] = state;
  return absl::OkStatus();
}

int64_t FakeWorkQueue::Enqueue(const std::string& gpu_type, const std::string& task_options_json) {
  absl::MutexLock lock(&mu_);
  const int64_t id = next_evaluation_++;
  evaluations_[id] = {gpu_type, task_options_json, 0, std::nullopt};
  queued_.push_back(id);
  return id;
}

void FakeWorkQueue::SetDrained(const std::string& worker_id, bool drained) {
  absl::MutexLock lock(&mu_);
  if (drained) {
    drained_.insert(worker_id);
  } else {
    drained_.erase(worker_id);
  }
}

void FakeWorkQueue::FailCompletions(absl::Status status, int count) {
  absl::MutexLock lock(&mu_);
  completion_failure_ = std::move(status);
  completion_failures_left_ = count;
}

int FakeWorkQueue::AdvanceAndReclaim(double seconds) {
  absl::MutexLock lock(&mu_);
  now_s_ += seconds;
  int reclaimed = 0;
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (it->second.deadline_s >= now_s_) {
      ++it;
      continue;
    }
    RequeueLocked(it->second.evaluation_id);
    it = leases_.erase(it);
    ++reclaimed;
  }
  return reclaimed;
}

void FakeWorkQueue::RequeueLocked(int64_t evaluation_id) {
  queued_.insert(std::lower_bound(queued_.begin(), queued_.end(), evaluation_id), evaluation_id);
}

std::vector<int64_t> FakeWorkQueue::Queued() {
  absl::MutexLock lock(&mu_);
  return {queued_.begin(), queued_.end()};
}

int FakeWorkQueue::Attempts(int64_t evaluation_id) {
  absl::MutexLock lock(&mu_);
  return evaluations_[evaluation_id].attempts;
}

std::optional<v1::EvalResult> FakeWorkQueue::StoredResult(int64_t evaluation_id) {
  absl::MutexLock lock(&mu_);
  return evaluations_[evaluation_id].result;
}

std::string FakeWorkQueue::Holder(const std::string& lease_id) {
  absl::MutexLock lock(&mu_);
  auto it = leases_.find(lease_id);
  return it == leases_.end() ? std::string() : it->second.worker_id;
}

std::string FakeWorkQueue::WorkerState(const std::string& worker_id) {
  absl::MutexLock lock(&mu_);
  return worker_states_[worker_id];
}

int FakeWorkQueue::completion_calls() {
  absl::MutexLock lock(&mu_);
  return completion_calls_;
}

}  // namespace kforge
