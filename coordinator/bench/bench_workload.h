// The dispatch benchmark's workload: a tiny KernelBench task, candidates whose source names
// the benchmark batch they belong to (so a simulated worker can tell which batch a lease came
// from without asking the coordinator), and the no-op result a simulated worker answers with.
//
// Pure functions; thread-safe.
#ifndef KFORGE_COORDINATOR_BENCH_BENCH_WORKLOAD_H_
#define KFORGE_COORDINATOR_BENCH_BENCH_WORKLOAD_H_

#include <string>
#include <vector>

#include "kforge/v1/eval.pb.h"
#include "kforge/v1/jobs.pb.h"

namespace kforge {

// A 10-line KernelBench ReLU task (passes the coordinator's task validation).
const std::string& BenchTaskSource();

// A unique candidate source (distinct content addresses across phases, batches and items).
std::string BenchCandidateSource(int phase, int batch, int item);
// The batch a BenchCandidateSource names; -1 for any other source.
int BenchBatchOf(const std::string& candidate_source);

// `evaluations` candidates of `phase` on `gpu_type`, cut into requests of at most
// `batch_size`; batch numbers count from 0.
std::vector<v1::EvaluateBatchRequest> BenchBatches(const std::string& task_id,
                                                   const std::string& gpu_type, int phase,
                                                   int evaluations, int batch_size);

// What a simulated worker reports for every lease: verdict ok, nothing run.
void FillNoOpResult(v1::EvalResult* result);

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_BENCH_BENCH_WORKLOAD_H_
