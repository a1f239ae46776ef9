#include "coordinator/bench/latency_summary.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_format.h"

namespace kforge {
namespace {

// Nearest rank on sorted samples: the ceil(p * n)-th smallest.
double Percentile(const std::vector<double>& sorted, double p) {
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

LatencySummary Summarize(std::vector<double> samples_ms) {
  LatencySummary s;
  if (samples_ms.empty()) return s;
  std::sort(samples_ms.begin(), samples_ms.end());
  s.n = static_cast<int64_t>(samples_ms.size());
  s.mean_ms = std::accumulate(samples_ms.begin(), samples_ms.end(), 0.0) /
              static_cast<double>(samples_ms.size());
  s.p50_ms = Percentile(samples_ms, 0.50);
  s.p90_ms = Percentile(samples_ms, 0.90);
  s.p99_ms = Percentile(samples_ms, 0.99);
  s.max_ms = samples_ms.back();
  return s;
}

std::string SummaryJson(const LatencySummary& s) {
  return absl::StrFormat(R"({"n":%d,"mean":%.3f,"p50":%.3f,"p90":%.3f,"p99":%.3f,"max":%.3f})", s.n,
                         s.mean_ms, s.p50_ms, s.p90_ms, s.p99_ms, s.max_ms);
}

std::string SummaryHeader() {
  return absl::StrFormat("%-34s %8s %9s %9s %9s %9s %9s", "latency (ms)", "n", "mean", "p50", "p90",
                         "p99", "max");
}

std::string SummaryRow(const std::string& name, const LatencySummary& s) {
  return absl::StrFormat("%-34s %8d %9.2f %9.2f %9.2f %9.2f %9.2f", name, s.n, s.mean_ms, s.p50_ms,
                         s.p90_ms, s.p99_ms, s.max_ms);
}

}  // namespace kforge
