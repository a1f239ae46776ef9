// Order statistics of a set of latency samples, for benchmarks that print p50/p90/p99.
//
// Percentiles use the nearest-rank definition: pXX is the smallest sample that at least XX%
// of the samples are less than or equal to, so every reported value is a measured one.
//
// Thread-safety: LatencySamples is thread-safe (samples arrive on gRPC callback threads);
// Summarize and the formatting helpers are pure functions.
#ifndef KFORGE_COORDINATOR_BENCH_LATENCY_SUMMARY_H_
#define KFORGE_COORDINATOR_BENCH_LATENCY_SUMMARY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace kforge {

struct LatencySummary {
  int64_t n = 0;
  double mean_ms = 0;
  double p50_ms = 0;
  double p90_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
};

// Summarizes `samples_ms` (any order; empty gives n = 0 and zeros).
LatencySummary Summarize(std::vector<double> samples_ms);

// {"n":..,"mean":..,"p50":..,"p90":..,"p99":..,"max":..} with values in milliseconds.
std::string SummaryJson(const LatencySummary& s);
// One row of the human table: name, then n, mean, p50, p90, p99, max in aligned columns.
std::string SummaryRow(const std::string& name, const LatencySummary& s);
// The header that goes above SummaryRow lines.
std::string SummaryHeader();

class LatencySamples {
 public:
  void Add(double ms) {
    absl::MutexLock lock(&mu_);
    samples_.push_back(ms);
  }
  void Clear() {
    absl::MutexLock lock(&mu_);
    samples_.clear();
  }
  LatencySummary Summary() {
    absl::MutexLock lock(&mu_);
    return Summarize(samples_);
  }

 private:
  absl::Mutex mu_;
  std::vector<double> samples_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_BENCH_LATENCY_SUMMARY_H_
