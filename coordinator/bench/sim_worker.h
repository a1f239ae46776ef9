// One simulated GPU worker on a WorkerService.Connect stream: it says hello, answers every
// lease with a no-op result (FillNoOpResult), at once or after a simulated evaluation time,
// and heartbeats when told to. It reports lease arrivals and results to a DispatchRecorder
// (see there for what is measured).
//
// Threading: gRPC's callback threads run the reactions, the DelayScheduler's thread sends
// delayed results; Start, Heartbeat, Finish and Wait may be called from any one other thread.
// At most one write is in flight; later messages queue.
// Lifetime: the worker must stay alive until Wait has returned (the stream has ended) and
// until the DelayScheduler it was given is destroyed.
#ifndef KFORGE_COORDINATOR_BENCH_SIM_WORKER_H_
#define KFORGE_COORDINATOR_BENCH_SIM_WORKER_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "coordinator/bench/delay_scheduler.h"
#include "coordinator/bench/dispatch_recorder.h"
#include "grpcpp/grpcpp.h"
#include "kforge/v1/worker.grpc.pb.h"

namespace kforge {

class SimWorker final : public grpc::ClientBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage> {
 public:
  // `delay` (borrowed, may be null when `eval_time` is zero) holds results back for
  // `eval_time` after their lease arrived.
  SimWorker(std::string worker_id, int slots, DispatchRecorder& recorder, DelayScheduler* delay,
            BenchClock::duration eval_time);

  // Opens the stream on `stub` and sends hello.
  void Start(v1::WorkerService::Stub& stub);
  // Waits until hello was written; false when the stream failed first or at `deadline`.
  bool WaitHelloSent(absl::Time deadline);
  // Queues a heartbeat naming the leases held now.
  void Heartbeat();
  // Half-closes the stream after the queued messages; the coordinator then ends it.
  void Finish();
  // Waits for the end of the stream until `deadline`, then cancels it. Returns its status.
  grpc::Status Wait(absl::Time deadline);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

 private:
  struct Outgoing {
    v1::WorkerMessage msg;
    int64_t evaluation_id = -1;  // >= 0 for a result
  };
  void Send(Outgoing out);
  // Stamps a result as sent (before it is handed to gRPC, so the next lease cannot beat the
  // stamp), then writes it.
  void Write(Outgoing out);

  const std::string worker_id_;
  const int slots_;
  DispatchRecorder& recorder_;
  DelayScheduler* const delay_;
  const BenchClock::duration eval_time_;
  grpc::ClientContext ctx_;
  v1::CoordinatorMessage in_;      // owned by the read in flight
  v1::WorkerMessage writing_msg_;  // owned by the write in flight
  absl::Notification hello_sent_;
  absl::Notification done_;
  grpc::Status status_;  // written once before done_ is notified

  absl::Mutex mu_;
  std::deque<Outgoing> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  std::set<std::string> held_ ABSL_GUARDED_BY(mu_);
  // The latest result not yet followed by a lease, and the recorder phase it belongs to.
  std::optional<DispatchRecorder::SentResult> unanswered_result_ ABSL_GUARDED_BY(mu_);
  int unanswered_result_phase_ ABSL_GUARDED_BY(mu_) = -1;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_BENCH_SIM_WORKER_H_
