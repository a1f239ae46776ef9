// The benchmark's client side: submits batches through JobService.EvaluateBatch and reads
// every stream to its end, with at most `window` streams open at once (the next batch is
// submitted when one finishes). Submit times, enqueue commits and every record read go to a
// DispatchRecorder.
//
// Threading: Run blocks the calling thread; the streams' reactions run on gRPC's callback
// threads. Not reentrant: one Run at a time.
#ifndef KFORGE_COORDINATOR_BENCH_BATCH_CLIENT_H_
#define KFORGE_COORDINATOR_BENCH_BATCH_CLIENT_H_

#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "coordinator/bench/dispatch_recorder.h"
#include "kforge/v1/jobs.grpc.pb.h"

namespace kforge {

class BatchClient {
 public:
  BatchClient(v1::JobService::Stub& stub, DispatchRecorder& recorder)
      : stub_(stub), recorder_(recorder) {}

  // Runs every request (request i is batch i for the recorder). OK when every stream ended
  // OK; otherwise the first stream's error. At `deadline` the open streams are cancelled and
  // the answer is DEADLINE_EXCEEDED.
  absl::Status Run(const std::vector<v1::EvaluateBatchRequest>& requests, int window,
                   absl::Time deadline);

 private:
  class Stream;
  void StreamDone(const grpc::Status& status);

  v1::JobService::Stub& stub_;
  DispatchRecorder& recorder_;
  absl::Mutex mu_;
  int open_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_BENCH_BATCH_CLIENT_H_
