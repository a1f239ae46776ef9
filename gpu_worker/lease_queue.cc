#include "gpu_worker/lease_queue.h"

#include <utility>

namespace kforge {

std::optional<size_t> LeaseQueue::Add(const v1::Lease& lease) {
  absl::MutexLock lock(&mu_);
  if (draining_) return std::nullopt;
  held_.insert(lease.lease_id());
  queued_.push_back(Pending{lease});
  return held_.size();
}

LeaseQueue::Iterator LeaseQueue::PickForSlot() {
  auto first_not_started = queued_.end();
  for (auto it = queued_.begin(); it != queued_.end(); ++it) {
    if (it->build == Pending::Build::kDone) return it;
    if (it->build == Pending::Build::kNotStarted && first_not_started == queued_.end()) {
      first_not_started = it;
    }
  }
  return first_not_started;
}

LeaseQueue::Iterator LeaseQueue::PickForBuild() {
  int idle = slots_ - running_;  // the oldest leases are theirs
  for (auto it = queued_.begin(); it != queued_.end(); ++it) {
    if (it->build != Pending::Build::kNotStarted) continue;
    if (idle-- > 0) continue;
    return it;
  }
  return queued_.end();
}

std::optional<LeaseQueue::SlotWork> LeaseQueue::TakeForSlot() {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return closed_ || PickForSlot() != queued_.end();
  };
  mu_.Await(absl::Condition(&ready));
  auto it = PickForSlot();
  if (it == queued_.end()) return std::nullopt;
  SlotWork work{std::move(it->lease), it->build == Pending::Build::kDone};
  queued_.erase(it);
  ++running_;
  return work;
}

std::optional<v1::Lease> LeaseQueue::TakeForBuild() {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return closed_ || PickForBuild() != queued_.end();
  };
  mu_.Await(absl::Condition(&ready));
  if (closed_) return std::nullopt;
  auto it = PickForBuild();
  it->build = Pending::Build::kRunning;
  return it->lease;
}

bool LeaseQueue::FinishBuild(const std::string& lease_id, bool final) {
  absl::MutexLock lock(&mu_);
  for (auto it = queued_.begin(); it != queued_.end(); ++it) {
    if (it->lease.lease_id() != lease_id) continue;
    // Still ours (a drain hands queued leases back meanwhile).
    if (!final) {
      it->build = Pending::Build::kDone;
      return false;
    }
    queued_.erase(it);
    ++running_;  // answered like a slot's result
    return true;
  }
  return false;
}

void LeaseQueue::Answer(const std::string& lease_id, v1::EvalResult result, ResultWriter& writer) {
  v1::WorkerMessage m;
  m.mutable_result()->set_lease_id(lease_id);
  *m.mutable_result()->mutable_result() = std::move(result);
  {
    absl::MutexLock lock(&mu_);
    held_.erase(lease_id);
  }
  if (!writer.Write(m)) KeepInOutbox(std::move(m));
  absl::MutexLock lock(&mu_);
  --running_;
}

std::vector<v1::Lease> LeaseQueue::StartDraining() {
  absl::MutexLock lock(&mu_);
  std::vector<v1::Lease> released;
  if (draining_) return released;
  draining_ = true;
  for (auto& p : queued_) {
    held_.erase(p.lease.lease_id());
    released.push_back(std::move(p.lease));
  }
  queued_.clear();
  return released;
}

bool LeaseQueue::draining() {
  absl::MutexLock lock(&mu_);
  return draining_;
}

std::vector<std::string> LeaseQueue::HeldIds() {
  absl::MutexLock lock(&mu_);
  return {held_.begin(), held_.end()};
}

bool LeaseQueue::Idle() {
  absl::MutexLock lock(&mu_);
  return running_ == 0 && queued_.empty() && outbox_.empty();
}

std::vector<v1::WorkerMessage> LeaseQueue::TakeOutbox() {
  absl::MutexLock lock(&mu_);
  std::vector<v1::WorkerMessage> out;
  out.swap(outbox_);
  return out;
}

void LeaseQueue::KeepInOutbox(v1::WorkerMessage message) {
  absl::MutexLock lock(&mu_);
  outbox_.push_back(std::move(message));
}

size_t LeaseQueue::undelivered() {
  absl::MutexLock lock(&mu_);
  return outbox_.size();
}

void LeaseQueue::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  queued_.clear();
}

}  // namespace kforge
