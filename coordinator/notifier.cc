#include "coordinator/notifier.h"

namespace kforge {

void Notifier::WorkAdded(const std::string& gpu_type, int64_t count) {
  absl::MutexLock lock(&mu_);
  // Work of type "any" fits every lane; otherwise only the lane of its own type.
  auto wake_from = [&](std::list<WorkWaiter*>& lane) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (count > 0 && !lane.empty()) {
      WorkWaiter* w = lane.front();
      count -= w->free_slots_;
      w->WakeLocked();
    }
  };
  if (gpu_type == "any") {
    for (auto& [type, lane] : armed_) wake_from(lane);
  } else if (auto it = armed_.find(gpu_type); it != armed_.end()) {
    wake_from(it->second);
  }
}

void Notifier::BatchChanged(const std::string& batch_id) {
  absl::MutexLock lock(&mu_);
  auto [begin, end] = watches_.equal_range(batch_id);
  for (auto it = begin; it != end; ++it) {
    ++it->second->generation_;
    it->second->changed_.Signal();
  }
}

void Notifier::WorkWaiter::Arm(int free_slots) {
  absl::MutexLock lock(&notifier_.mu_);
  free_slots_ = free_slots;
  if (armed_) return;
  std::list<WorkWaiter*>& lane = notifier_.armed_[gpu_type_];
  position_ = lane.insert(lane.end(), this);
  armed_ = true;
}

void Notifier::WorkWaiter::Disarm() {
  absl::MutexLock lock(&notifier_.mu_);
  DisarmLocked();
}

void Notifier::WorkWaiter::DisarmLocked() {
  if (!armed_) return;
  notifier_.armed_[gpu_type_].erase(position_);
  armed_ = false;
}

void Notifier::WorkWaiter::Wake() {
  absl::MutexLock lock(&notifier_.mu_);
  WakeLocked();
}

void Notifier::WorkWaiter::WakeLocked() {
  DisarmLocked();
  ++generation_;
  woken_.Signal();
}

void Notifier::WorkWaiter::Wait(uint64_t seen, absl::Duration timeout) {
  absl::MutexLock lock(&notifier_.mu_);
  absl::Time deadline = absl::Now() + timeout;
  while (generation_ == seen && !woken_.WaitWithDeadline(&notifier_.mu_, deadline)) {
  }
  DisarmLocked();
}

Notifier::BatchWatch::BatchWatch(Notifier& notifier, const std::string& batch_id)
    : notifier_(notifier) {
  absl::MutexLock lock(&notifier_.mu_);
  entry_ = notifier_.watches_.emplace(batch_id, this);
}

Notifier::BatchWatch::~BatchWatch() {
  absl::MutexLock lock(&notifier_.mu_);
  notifier_.watches_.erase(entry_);
}

void Notifier::BatchWatch::WaitChange(uint64_t seen, absl::Time deadline) {
  absl::MutexLock lock(&notifier_.mu_);
  while (generation_ == seen && !changed_.WaitWithDeadline(&notifier_.mu_, deadline)) {
  }
}

}  // namespace kforge
