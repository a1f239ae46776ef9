// Accounting of provider calls: prices each record from the price table, stores it in the
// call log (llm_calls) and counts it in the metrics (calls by provider and status, tokens,
// latency, cost).
//
// Price table: a JSON object of model name -> {"input_per_mtok": USD, "output_per_mtok": USD}
// (prices per million tokens); a model that is not listed costs 0.
//
// A failure to store is logged and counted (kforge_gateway_accounting_errors_total) but does
// not fail the request: the tokens were spent, and the candidates are still worth returning.
//
// Thread-safety: thread-safe. The log (if any) and the registry must outlive this object.
#ifndef KFORGE_LLM_GATEWAY_CALL_ACCOUNTING_H_
#define KFORGE_LLM_GATEWAY_CALL_ACCOUNTING_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "llm_gateway/call_log.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace kforge::gateway {

struct ModelPrice {
  double input_per_mtok = 0;
  double output_per_mtok = 0;
};
using PriceTable = std::map<std::string, ModelPrice>;

// Parses the JSON text of a price table. INVALID_ARGUMENT (saying where) when malformed.
absl::StatusOr<PriceTable> ParsePriceTable(const std::string& json_text);

class CallAccounting {
 public:
  // `log` may be null: nothing is stored and call ids are "".
  CallAccounting(CallLog* log, PriceTable prices, prometheus::Registry& registry);

  // Prices `records` (fills cost_usd), stores them and counts them. Returns the call_id of the
  // last record as text, or "" when nothing was stored.
  std::string Record(const std::string& job_id, std::vector<AttemptRecord>& records);
  // See CallLog::CheckJob; OK without a log.
  absl::Status CheckJob(const std::string& job_id);

 private:
  CallLog* const log_;
  const PriceTable prices_;
  prometheus::Family<prometheus::Counter>& calls_;
  prometheus::Family<prometheus::Counter>& tokens_;
  prometheus::Family<prometheus::Counter>& cost_;
  prometheus::Family<prometheus::Histogram>& latency_;
  prometheus::Counter& accounting_errors_;
};

}  // namespace kforge::gateway

#endif  // KFORGE_LLM_GATEWAY_CALL_ACCOUNTING_H_
