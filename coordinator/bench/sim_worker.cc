#include "coordinator/bench/sim_worker.h"

#include "absl/strings/numbers.h"
#include "coordinator/bench/bench_workload.h"

namespace kforge {

SimWorker::SimWorker(std::string worker_id, int slots, DispatchRecorder& recorder,
                     DelayScheduler* delay, BenchClock::duration eval_time)
    : worker_id_(std::move(worker_id)),
      slots_(slots),
      recorder_(recorder),
      delay_(delay),
      eval_time_(eval_time) {}

void SimWorker::Start(v1::WorkerService::Stub& stub) {
  stub.async()->Connect(&ctx_, this);
  Outgoing hello;
  hello.msg.mutable_hello()->set_worker_id(worker_id_);
  Send(std::move(hello));
  StartRead(&in_);
  StartCall();
}

bool SimWorker::WaitHelloSent(absl::Time deadline) {
  return hello_sent_.WaitForNotificationWithDeadline(deadline) && !done_.HasBeenNotified();
}

void SimWorker::Heartbeat() {
  Outgoing out;
  v1::WorkerMessage::Heartbeat* hb = out.msg.mutable_heartbeat();
  {
    absl::MutexLock lock(&mu_);
    for (const std::string& id : held_) hb->add_lease_ids(id);
    hb->set_free_slots(static_cast<uint32_t>(std::max(0, slots_ - static_cast<int>(held_.size()))));
  }
  Send(std::move(out));
}

void SimWorker::Finish() {
  {
    absl::MutexLock lock(&mu_);
    if (closing_) return;
    closing_ = true;
    if (writing_ || broken_) return;  // OnWriteDone half-closes once the queue is empty
    writing_ = true;
  }
  StartWritesDone();
}

grpc::Status SimWorker::Wait(absl::Time deadline) {
  if (!done_.WaitForNotificationWithDeadline(deadline)) {
    ctx_.TryCancel();
    done_.WaitForNotification();
  }
  return status_;
}

void SimWorker::OnReadDone(bool ok) {
  if (!ok) return;  // the stream ended; OnDone follows
  BenchClock::time_point now = BenchClock::now();
  if (in_.has_lease()) {
    const v1::Lease& lease = in_.lease();
    int phase = recorder_.phase();
    std::optional<DispatchRecorder::SentResult> previous;
    {
      absl::MutexLock lock(&mu_);
      if (unanswered_result_phase_ == phase) previous = unanswered_result_;
      unanswered_result_.reset();
      held_.insert(lease.lease_id());
    }
    recorder_.LeaseArrived(BenchBatchOf(lease.request().candidate_source()), previous, now);
    Outgoing out;
    if (!absl::SimpleAtoi(lease.evaluation_id(), &out.evaluation_id)) out.evaluation_id = 0;
    v1::WorkerMessage::Result* result = out.msg.mutable_result();
    result->set_lease_id(lease.lease_id());
    FillNoOpResult(result->mutable_result());
    if (delay_ != nullptr && eval_time_ > BenchClock::duration::zero()) {
      delay_->At(now + eval_time_, [this, out]() mutable { Send(std::move(out)); });
    } else {
      Send(std::move(out));
    }
  }
  StartRead(&in_);
}

void SimWorker::Send(Outgoing out) {
  {
    absl::MutexLock lock(&mu_);
    if (closing_ || broken_) return;
    if (writing_) {
      queue_.push_back(std::move(out));
      return;
    }
    writing_ = true;
  }
  Write(std::move(out));
}

void SimWorker::Write(Outgoing out) {
  if (out.evaluation_id >= 0) {
    int phase = recorder_.phase();
    DispatchRecorder::SentResult sent = recorder_.ResultSent(out.evaluation_id, BenchClock::now());
    absl::MutexLock lock(&mu_);
    held_.erase(out.msg.result().lease_id());
    unanswered_result_ = sent;
    unanswered_result_phase_ = phase;
  }
  writing_msg_ = std::move(out.msg);
  StartWrite(&writing_msg_);
}

void SimWorker::OnWriteDone(bool ok) {
  if (!hello_sent_.HasBeenNotified()) hello_sent_.Notify();
  Outgoing next;
  bool half_close = false;
  {
    absl::MutexLock lock(&mu_);
    if (!ok) {
      broken_ = true;  // the stream is gone; OnDone follows
      writing_ = false;
      return;
    }
    if (queue_.empty()) {
      half_close = closing_;
      writing_ = half_close;
      if (!half_close) return;
    } else {
      next = std::move(queue_.front());
      queue_.pop_front();
    }
  }
  if (half_close) {
    StartWritesDone();
  } else {
    Write(std::move(next));
  }
}

void SimWorker::OnDone(const grpc::Status& status) {
  status_ = status;
  if (!hello_sent_.HasBeenNotified()) hello_sent_.Notify();
  done_.Notify();
}

}  // namespace kforge
