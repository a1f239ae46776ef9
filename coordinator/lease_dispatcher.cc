#include "coordinator/lease_dispatcher.h"

#include <algorithm>
#include <thread>

#include "common/base/log.h"
#include "common/dialect.h"
#include "common/result_json.h"
#include "coordinator/result_validation.h"
#include "google/protobuf/util/json_util.h"
#include "kforge/v1/jobs.pb.h"

namespace kforge {
namespace {

// The task's stored options (precision, tolerances, trials, policy, speedup clock) become
// engine settings.
void ApplyTaskOptions(const std::string& options_json, v1::EvalRequest* req) {
  v1::TaskOptions opts;
  google::protobuf::util::JsonParseOptions parse;
  parse.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(options_json, &opts, parse).ok()) return;
  // fp16/bf16 tasks get KernelBench's 1e-2 unless the task sets its own tolerances; fp32 gets
  // the engine's defaults (which also follow the output dtype).
  bool low = opts.precision() == "fp16" || opts.precision() == "bf16";
  req->set_atol(opts.atol() > 0 ? opts.atol() : (low ? 1e-2 : 0));
  req->set_rtol(opts.rtol() > 0 ? opts.rtol() : (low ? 1e-2 : 0));
  req->set_correctness_trials(opts.correctness_trials());
  req->set_policy(opts.policy());
  req->set_speedup_clock(opts.speedup_clock());
  req->set_numerics(opts.numerics());
}

v1::CoordinatorMessage LeaseMessage(const LeaseGrant& g, double lease_timeout_s) {
  v1::CoordinatorMessage out;
  v1::Lease* l = out.mutable_lease();
  l->set_lease_id(g.lease_id);
  l->set_evaluation_id(std::to_string(g.evaluation_id));
  l->set_attempt(static_cast<uint32_t>(g.attempt));
  l->set_deadline_s(lease_timeout_s);
  v1::EvalRequest* req = l->mutable_request();
  req->set_task_source(g.task_source);
  req->set_candidate_source(g.candidate_source);
  req->set_task_name(g.task_name);
  v1::Dialect dialect = v1::DIALECT_UNSPECIFIED;
  ParseDialect(g.dialect, &dialect);
  req->set_dialect(dialect);
  ApplyTaskOptions(g.task_options_json, req);
  return out;
}

// The queue's transient errors (work_queue.h).
bool IsTransient(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsAborted(status);
}

}  // namespace

DispatchMetrics::DispatchMetrics(prometheus::Registry& registry)
    : results(prometheus::BuildCounter()
                  .Name("kforge_evaluations_total")
                  .Help("Evaluations finished, by verdict and GPU type")
                  .Register(registry)),
      refused(prometheus::BuildCounter()
                  .Name("kforge_results_refused_total")
                  .Help("Malformed results refused (nothing stored), by GPU type")
                  .Register(registry)),
      leases(prometheus::BuildCounter()
                 .Name("kforge_leases_granted_total")
                 .Help("Leases handed to workers, by GPU type")
                 .Register(registry)),
      queue_wait(prometheus::BuildHistogram()
                     .Name("kforge_queue_wait_seconds")
                     .Help("Time from enqueue to lease, by GPU type")
                     .Register(registry)) {}

int WorkerCapacity(int slots, uint32_t requested_prefetch) {
  return slots + static_cast<int>(
                     std::min<uint32_t>(requested_prefetch, 2u * static_cast<uint32_t>(slots)));
}

LeaseDispatcher::LeaseDispatcher(WorkQueue& queue, Notifier& notifier, WorkerSender& sender,
                                 DispatchMetrics& metrics, DispatchSettings settings,
                                 std::function<absl::Status()> check_credentials, AuditLog* audit)
    : queue_(queue),
      notifier_(notifier),
      sender_(sender),
      metrics_(metrics),
      settings_(std::move(settings)),
      check_credentials_(std::move(check_credentials)),
      audit_(audit),
      waiter_(notifier, settings_.gpu_type),
      leases_granted_(metrics.leases.Add({{"gpu_type", settings_.gpu_type}})),
      queue_wait_(metrics.queue_wait.Add({{"gpu_type", settings_.gpu_type}},
                                         prometheus::Histogram::BucketBoundaries{
                                             0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600, 3600})) {
  absl::MutexLock lock(&mu_);
  outstanding_.insert(settings_.held.begin(), settings_.held.end());
}

bool LeaseDispatcher::StillValid() {
  const absl::Time now = absl::Now();
  {
    absl::MutexLock lock(&mu_);
    if (cut_off_) return false;
    if (now - checked_at_ < absl::Seconds(settings_.poll_interval_s)) return true;
  }
  if (absl::Status who = check_credentials_(); absl::IsUnauthenticated(who)) {
    CutOff(std::string(who.message()));
    return false;
  }
  absl::MutexLock lock(&mu_);
  checked_at_ = now;
  return true;
}

LeaseDispatcher::Offer LeaseDispatcher::OfferLeases() {
  // A stream that only ever releases (or says nothing) must not go on receiving leases, and
  // their sources, after its token was revoked or expired.
  if (!StillValid()) return {true, 0, 0};
  Offer offer;
  offer.free = Reserve();
  if (offer.free < 0) return {true, 0, 0};
  if (offer.free == 0) return offer;
  waiter_.Arm(offer.free);
  auto leased = queue_.Lease(Request(offer.free));
  if (!leased.ok()) {
    LogWarning("lease failed", {{"error", std::string(leased.status().message())}});
  } else {
    offer.granted = static_cast<int>(leased->grants.size());
    Send(*leased);
  }
  Unreserve(offer.free);
  if (offer.granted == offer.free) waiter_.Disarm();
  return offer;
}

void LeaseDispatcher::RunLeasing(const std::function<bool()>& cancelled) {
  while (!cancelled()) {
    uint64_t seen = waiter_.generation();
    Offer offer = OfferLeases();
    if (offer.ended) break;
    if (offer.free > 0 && offer.granted == offer.free) continue;
    waiter_.Wait(seen, absl::Seconds(settings_.poll_interval_s));
  }
}

bool LeaseDispatcher::Handle(const v1::WorkerMessage& msg) {
  // Credentials are checked again at every message: a revoked or expired token ends the
  // stream at its next heartbeat, result or release, and delivers nothing.
  if (absl::Status who = check_credentials_(); absl::IsUnauthenticated(who)) {
    CutOff(std::string(who.message()), /*by_reader=*/true);
    return false;
  }
  {
    absl::MutexLock lock(&mu_);
    checked_at_ = absl::Now();
  }
  if (msg.has_heartbeat()) {
    Heartbeat(msg.heartbeat());
  } else if (msg.has_result()) {
    StoreResult(msg.result());
  } else if (msg.has_release()) {
    Release(msg.release().lease_id());
    {
      absl::MutexLock lock(&mu_);
      outstanding_.erase(msg.release().lease_id());
    }
    waiter_.Wake();
  }
  return true;
}

void LeaseDispatcher::ReaderEnded() {
  {
    absl::MutexLock lock(&mu_);
    reader_done_ = true;
  }
  waiter_.Wake();
}

bool LeaseDispatcher::reader_done() {
  absl::MutexLock lock(&mu_);
  return reader_done_;
}

std::optional<absl::Status> LeaseDispatcher::cut_off() {
  absl::MutexLock lock(&mu_);
  return cut_off_;
}

bool LeaseDispatcher::Drained() {
  absl::MutexLock lock(&mu_);
  return draining_ && outstanding_.empty();
}

void LeaseDispatcher::Finish() {
  if (!Drained()) return;
  (void)queue_.MarkWorker(settings_.worker_id, "gone");
  LogInfo("worker drained and left", {{"worker_id", settings_.worker_id}});
}

LeaseRequest LeaseDispatcher::Request(int n) const {
  return {settings_.worker_id, settings_.gpu_type, n, settings_.lease_timeout_s};
}

int LeaseDispatcher::Reserve() {
  absl::MutexLock lock(&mu_);
  if (reader_done_) return -1;
  int free = draining_ ? 0 : settings_.capacity - static_cast<int>(outstanding_.size()) - reserved_;
  free = std::max(free, 0);
  reserved_ += free;
  return free;
}

void LeaseDispatcher::Unreserve(int n) {
  absl::MutexLock lock(&mu_);
  reserved_ -= n;
}

void LeaseDispatcher::Heartbeat(const v1::WorkerMessage::Heartbeat& heartbeat) {
  std::vector<std::string> ids(heartbeat.lease_ids().begin(), heartbeat.lease_ids().end());
  if (auto s = queue_.Heartbeat(settings_.worker_id, ids, settings_.lease_timeout_s); !s.ok()) {
    LogWarning("heartbeat not recorded",
               {{"worker_id", settings_.worker_id}, {"error", std::string(s.message())}});
  }
  absl::MutexLock lock(&mu_);
  draining_ = heartbeat.draining();
}

void LeaseDispatcher::StoreResult(const v1::WorkerMessage::Result& r) {
  {
    absl::MutexLock lock(&mu_);
    outstanding_.erase(r.lease_id());
  }
  if (absl::Status valid = ValidateResult(r.result()); !valid.ok()) {
    RefuseResult(r.lease_id(), std::string(valid.message()));
    return;
  }
  int free = Reserve();
  LeaseRequest next = Request(std::max(free, 0));
  // The database may be restarting: retry for a while before leaving the lease to expire
  // (then the evaluation runs again; nothing is lost either way).
  auto done = queue_.CompleteAndLease(r.lease_id(), r.result(), next);
  for (int attempt = 0;
       !done.ok() && IsTransient(done.status()) && attempt < settings_.store_retries; ++attempt) {
    std::this_thread::sleep_for(absl::ToChronoMilliseconds(settings_.store_retry_delay));
    done = queue_.CompleteAndLease(r.lease_id(), r.result(), next);
  }
  int granted = 0;
  if (!done.ok() && absl::IsInvalidArgument(done.status())) {
    // The database refused this result's data (a data exception or a constraint): storing it
    // again would fail again, and an untold worker's lease would be leased again and again.
    // The database's text may quote the data: only the log has it, not the worker or the
    // stored reason.
    LogError("result not storable",
             {{"lease_id", r.lease_id()}, {"error", std::string(done.status().message())}});
    RefuseResult(r.lease_id(),
                 "the database refused to store it as data (the coordinator's log says why)");
  } else if (!done.ok()) {
    // Transient or unknown: the lease stays; the worker re-sends after reconnecting, or it
    // expires, which counts the attempt.
    LogError("result not stored",
             {{"lease_id", r.lease_id()}, {"error", std::string(done.status().message())}});
  } else if (!done->mismatch.empty()) {
    granted = static_cast<int>(done->next.grants.size());
    Send(done->next);
    RefuseResult(r.lease_id(), "malformed result: " + done->mismatch);
  } else {
    granted = static_cast<int>(done->next.grants.size());
    Send(done->next);
    const char* verdict = VerdictName(r.result().verdict());
    metrics_.results.Add({{"verdict", verdict}, {"gpu_type", settings_.gpu_type}}).Increment();
    LogInfo(done->stored ? "result stored" : "stale result dropped",
            {{"lease_id", r.lease_id()}, {"verdict", verdict}});
    if (done->stored) notifier_.BatchChanged(done->batch_id);
  }
  if (free > 0) Unreserve(free);
  // A slot this did not fill is the handler's to watch (its next lease arms the waiter).
  if (granted < free) waiter_.Wake();
}

// The worker's token is no longer valid: its leases go back to the queue (attempts not
// counted: the evaluations did nothing wrong) and the stream ends UNAUTHENTICATED.
void LeaseDispatcher::CutOff(const std::string& why, bool by_reader) {
  {
    // Under the write lock: a lease being written finishes first, and none is written after
    // (Send checks it); once only, though both threads may find the token revoked.
    absl::MutexLock write(&write_mu_);
    absl::MutexLock lock(&mu_);
    // The reader stops at this message: said with the cut-off, so that the handler thread,
    // which may see the cut-off first, does not take the reader for one still waiting.
    if (by_reader) reader_done_ = true;
    if (cut_off_) return;
    cut_off_ = absl::UnauthenticatedError("worker credentials no longer valid: " + why);
  }
  LogWarning("worker cut off", {{"worker_id", settings_.worker_id}, {"error", why}});
  Principal coordinator{"", "coordinator", "system", {}};
  Audit(audit_, coordinator, "cut_off_worker", settings_.worker_id, {{"reason", why}});
  auto released = queue_.ReleaseWorkerLeases(settings_.worker_id);
  if (!released.ok()) {
    LogError(
        "leases of a cut-off worker not released",
        {{"worker_id", settings_.worker_id}, {"error", std::string(released.status().message())}});
  } else {
    for (const auto& [type, n] : *released) notifier_.WorkAdded(type, n);
  }
  absl::MutexLock lock(&mu_);
  outstanding_.clear();
}

// Stores nothing of a malformed result: the lease goes back to the queue with its attempt
// counted (a worker that keeps sending garbage uses the evaluation's attempts up, and a result
// every worker produces alike ends the evaluation after its last attempt instead of looping),
// and the worker is told why.
void LeaseDispatcher::RefuseResult(const std::string& lease_id, const std::string& reason) {
  LogWarning("result refused",
             {{"lease_id", lease_id}, {"worker_id", settings_.worker_id}, {"reason", reason}});
  metrics_.refused.Add({{"gpu_type", settings_.gpu_type}}).Increment();
  auto refusal = queue_.Refuse(lease_id, settings_.worker_id, reason);
  if (!refusal.ok()) {
    LogWarning("refused lease not handed back",
               {{"lease_id", lease_id}, {"error", std::string(refusal.status().message())}});
  } else if (!refusal->requeued_gpu_type.empty()) {
    notifier_.WorkAdded(refusal->requeued_gpu_type, 1);
  } else if (!refusal->ended_batch_id.empty()) {
    LogWarning("evaluation ended: every attempt's result was refused", {{"lease_id", lease_id}});
    notifier_.BatchChanged(refusal->ended_batch_id);
  }
  v1::CoordinatorMessage out;
  out.mutable_result_refused()->set_lease_id(lease_id);
  out.mutable_result_refused()->set_reason(reason);
  Write(out);
  waiter_.Wake();  // the freed slot is the handler's to fill
}

void LeaseDispatcher::Release(const std::string& lease_id) {
  auto type = queue_.Release(lease_id, settings_.worker_id);
  if (!type.ok()) {
    LogWarning("release failed",
               {{"lease_id", lease_id}, {"error", std::string(type.status().message())}});
  } else if (!type->empty()) {
    notifier_.WorkAdded(*type, 1);
  }
}

void LeaseDispatcher::Send(const Leased& leased) {
  for (const auto& [type, n] : leased.passed_over) notifier_.WorkAdded(type, n);
  for (size_t i = 0; i < leased.grants.size(); ++i) {
    const LeaseGrant& g = leased.grants[i];
    {
      // Counted before the write, so that a result racing back finds it.
      absl::MutexLock lock(&mu_);
      outstanding_.insert(g.lease_id);
    }
    leases_granted_.Increment();
    queue_wait_.Observe(g.waited_s);
    LogInfo("lease granted", {{"lease_id", g.lease_id},
                              {"evaluation_id", std::to_string(g.evaluation_id)},
                              {"worker_id", settings_.worker_id}});
    bool written = false;
    {
      absl::MutexLock write(&write_mu_);
      bool cut = false;
      {
        absl::MutexLock lock(&mu_);
        cut = cut_off_.has_value();
      }
      // A worker cut off while these were leased gets none of them (nor their sources).
      if (!cut) written = sender_.Send(LeaseMessage(g, settings_.lease_timeout_s));
    }
    if (!written) {
      // The worker is gone or cut off: hand back what it never received (this one and the
      // rest).
      for (size_t j = i; j < leased.grants.size(); ++j) {
        Release(leased.grants[j].lease_id);
        absl::MutexLock lock(&mu_);
        outstanding_.erase(leased.grants[j].lease_id);
      }
      return;
    }
  }
}

bool LeaseDispatcher::Write(const v1::CoordinatorMessage& message) {
  absl::MutexLock lock(&write_mu_);
  return sender_.Send(message);
}

}  // namespace kforge
