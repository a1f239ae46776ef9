#include "gpu_worker/coordinator_session.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "common/base/log.h"

namespace kforge {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kTick = std::chrono::milliseconds(50);

void SleepInTicks(double seconds) {
  for (double w = 0; w < seconds; w += 0.05) std::this_thread::sleep_for(kTick);
}

v1::WorkerMessage ReleaseOf(const std::string& lease_id) {
  v1::WorkerMessage rel;
  rel.mutable_release()->set_lease_id(lease_id);
  rel.mutable_release()->set_reason("worker draining");
  return rel;
}

}  // namespace

CoordinatorSession::CoordinatorSession(CoordinatorLink& link, LeaseQueue& leases,
                                       SessionOptions options)
    : link_(link),
      leases_(leases),
      options_(std::move(options)),
      backoff_s_(options_.initial_backoff_s),
      heartbeat_interval_s_(options_.default_heartbeat_interval_s) {}

bool CoordinatorSession::Write(const v1::WorkerMessage& message) {
  std::shared_ptr<CoordinatorStream> stream;
  {
    absl::MutexLock lock(&mu_);
    stream = current_;
  }
  return stream && stream->Write(message);
}

std::string CoordinatorSession::worker_id() {
  absl::MutexLock lock(&mu_);
  return worker_id_;
}

void CoordinatorSession::Backoff() {
  if (options_.sleep) {
    options_.sleep(backoff_s_);
  } else {
    SleepInTicks(backoff_s_);
  }
  backoff_s_ = std::min(backoff_s_ * 2, options_.max_backoff_s);
}

void CoordinatorSession::Run(const std::atomic<bool>& stop) {
  auto drain_deadline = Clock::time_point::max();
  while (true) {
    if (stop && drain_deadline == Clock::time_point::max()) {
      drain_deadline = Clock::now() + std::chrono::milliseconds(
                                          static_cast<int64_t>(options_.drain_timeout_s * 1000));
    }
    if (stop && leases_.Idle()) break;  // draining with nothing left to deliver: done
    // Disconnected while draining: keep trying to deliver for a while, then leave the leases
    // to expire (they run again elsewhere; nothing is lost).
    if (Clock::now() > drain_deadline) {
      LogWarning(
          "giving up on delivering results while draining; their leases will expire "
          "and run again elsewhere",
          {{"undelivered", std::to_string(leases_.undelivered())}});
      break;
    }
    if (!EnsureRegistered()) continue;
    bool got_any = false;
    absl::Status fin = Connect(stop, &got_any);
    if (stop && leases_.Idle()) break;
    LogWarning("stream to the coordinator ended; reconnecting",
               {{"error", std::string(fin.message())}, {"backoff_s", std::to_string(backoff_s_)}});
    // A coordinator that no longer knows this worker (its row is gone), or knows it under
    // another identity (a new token), asks for a new registration; anything else keeps the id.
    if (absl::IsNotFound(fin) || absl::IsPermissionDenied(fin)) {
      absl::MutexLock lock(&mu_);
      worker_id_.clear();
    }
    if (!got_any) Backoff();
  }
}

bool CoordinatorSession::EnsureRegistered() {
  if (!worker_id().empty()) return true;
  v1::RegisterRequest reg;
  *reg.mutable_facts() = options_.facts;
  absl::StatusOr<v1::RegisterResponse> resp = link_.Register(reg);
  if (!resp.ok()) {
    const bool refused =
        absl::IsUnauthenticated(resp.status()) || absl::IsPermissionDenied(resp.status());
    LogWarning(refused ? "the coordinator refused the registration; retrying"
                       : "cannot reach the coordinator; retrying",
               {{"error", std::string(resp.status().message())},
                {"backoff_s", std::to_string(backoff_s_)}});
    Backoff();
    return false;
  }
  if (resp->heartbeat_interval_s() > 0) heartbeat_interval_s_ = resp->heartbeat_interval_s();
  absl::MutexLock lock(&mu_);
  worker_id_ = resp->worker_id();
  return true;
}

absl::Status CoordinatorSession::Connect(const std::atomic<bool>& stop, bool* got_any) {
  std::shared_ptr<CoordinatorStream> s = link_.Connect();
  const std::string id = worker_id();
  {
    absl::MutexLock lock(&mu_);
    current_ = s;
  }
  v1::WorkerMessage hello;
  hello.mutable_hello()->set_worker_id(id);
  hello.mutable_hello()->set_prefetch(static_cast<uint32_t>(std::max(options_.prefetch, 0)));
  for (const auto& lease_id : leases_.HeldIds())
    hello.mutable_hello()->add_held_lease_ids(lease_id);
  s->Write(hello);
  LogInfo("connected", {{"worker_id", id}});
  // Results finished while disconnected go first.
  for (auto& m : leases_.TakeOutbox()) {
    if (!Write(m)) leases_.KeepInOutbox(std::move(m));
  }

  std::atomic<bool> session_over{false};
  std::thread heartbeat([&] { Heartbeats(*s, stop, session_over); });
  v1::CoordinatorMessage msg;
  while (s->Read(&msg)) {
    *got_any = true;
    backoff_s_ = options_.initial_backoff_s;
    if (msg.has_result_refused()) {
      LogError("result refused by the coordinator", {{"lease_id", msg.result_refused().lease_id()},
                                                     {"reason", msg.result_refused().reason()}});
      continue;
    }
    if (!msg.has_lease()) continue;
    std::optional<size_t> held = leases_.Add(msg.lease());
    if (!held) {
      s->Write(ReleaseOf(msg.lease().lease_id()));
      continue;
    }
    LogInfo("lease received", {{"lease_id", msg.lease().lease_id()},
                               {"evaluation_id", msg.lease().evaluation_id()},
                               {"held", std::to_string(*held)}});
  }
  session_over = true;
  heartbeat.join();
  s->Cancel();
  absl::Status fin = s->Finish();
  absl::MutexLock lock(&mu_);
  current_.reset();
  return fin;
}

void CoordinatorSession::Heartbeats(CoordinatorStream& s, const std::atomic<bool>& stop,
                                    const std::atomic<bool>& session_over) {
  const int capacity = static_cast<int>(options_.facts.slots()) + std::max(options_.prefetch, 0);
  bool announced_drain = false;
  auto next = Clock::now();
  while (!session_over) {
    const bool draining_now = stop.load();
    if (Clock::now() >= next || (draining_now && !announced_drain)) {
      std::vector<v1::Lease> to_release;
      if (draining_now) to_release = leases_.StartDraining();
      const std::vector<std::string> held = leases_.HeldIds();
      const bool draining = leases_.draining();
      v1::WorkerMessage hb;
      for (const auto& id : held) hb.mutable_heartbeat()->add_lease_ids(id);
      hb.mutable_heartbeat()->set_draining(draining);
      hb.mutable_heartbeat()->set_free_slots(
          draining ? 0
                   : static_cast<uint32_t>(std::max(capacity - static_cast<int>(held.size()), 0)));
      s.Write(hb);
      for (const auto& l : to_release) s.Write(ReleaseOf(l.lease_id()));
      announced_drain = draining_now;
      next =
          Clock::now() + std::chrono::milliseconds(static_cast<int>(heartbeat_interval_s_ * 1000));
    }
    if (draining_now && leases_.Idle()) {
      s.Cancel();  // drained: end the stream
      return;
    }
    std::this_thread::sleep_for(kTick);
  }
}

}  // namespace kforge
