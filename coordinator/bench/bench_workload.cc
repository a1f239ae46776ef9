#include "coordinator/bench/bench_workload.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kforge {
namespace {

constexpr char kBatchMarker[] = "# kforge-dispatch-bench batch=";

}  // namespace

const std::string& BenchTaskSource() {
  static const auto* source = new std::string(
      "import torch\n"
      "import torch.nn as nn\n"
      "\n"
      "class Model(nn.Module):\n"
      "    def forward(self, x):\n"
      "        return torch.relu(x)\n"
      "\n"
      "def get_inputs():\n"
      "    return [torch.randn(4096)]\n"
      "\n"
      "def get_init_inputs():\n"
      "    return []\n");
  return *source;
}

std::string BenchCandidateSource(int phase, int batch, int item) {
  return absl::StrCat(kBatchMarker, batch, " phase=", phase, " item=", item,
                      "\n"
                      "import torch\n"
                      "import torch.nn as nn\n"
                      "\n"
                      "class ModelNew(nn.Module):\n"
                      "    def forward(self, x):\n"
                      "        return torch.relu(x)\n");
}

int BenchBatchOf(const std::string& candidate_source) {
  constexpr size_t kMarkerLength = sizeof(kBatchMarker) - 1;
  if (candidate_source.compare(0, kMarkerLength, kBatchMarker) != 0) return -1;
  size_t end = candidate_source.find(' ', kMarkerLength);
  if (end == std::string::npos) return -1;
  int batch = -1;
  if (!absl::SimpleAtoi(candidate_source.substr(kMarkerLength, end - kMarkerLength), &batch)) {
    return -1;
  }
  return batch;
}

std::vector<v1::EvaluateBatchRequest> BenchBatches(const std::string& task_id,
                                                   const std::string& gpu_type, int phase,
                                                   int evaluations, int batch_size) {
  std::vector<v1::EvaluateBatchRequest> batches;
  for (int first = 0; first < evaluations; first += batch_size) {
    v1::EvaluateBatchRequest& req = batches.emplace_back();
    req.set_task_id(task_id);
    req.add_gpu_types(gpu_type);
    int batch = static_cast<int>(batches.size()) - 1;
    for (int item = first; item < evaluations && item < first + batch_size; ++item) {
      v1::CandidateSpec* c = req.add_candidates();
      c->set_source(BenchCandidateSource(phase, batch, item));
      c->set_dialect(v1::DIALECT_KERNELBENCH);
      c->set_client_ref(absl::StrCat(item));
    }
  }
  return batches;
}

void FillNoOpResult(v1::EvalResult* result) {
  result->set_verdict(v1::VERDICT_OK);
  result->set_reason("no-op evaluation (kforge-dispatch-bench)");
  result->set_speedup(1.0);
  result->set_stage("done");
  result->set_dialect(v1::DIALECT_KERNELBENCH);
}

}  // namespace kforge
