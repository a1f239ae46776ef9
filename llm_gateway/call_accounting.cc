#include "llm_gateway/call_accounting.h"

#include "absl/strings/str_cat.h"
#include "common/base/log.h"
#include "nlohmann/json.hpp"

namespace kforge::gateway {

absl::StatusOr<PriceTable> ParsePriceTable(const std::string& json_text) {
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("price table is not a JSON object");
  }
  PriceTable table;
  for (const auto& [model, price] : j.items()) {
    if (!price.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat("price of ", model, " is not an object"));
    }
    ModelPrice p;
    for (auto [key, field] : {std::pair{"input_per_mtok", &p.input_per_mtok},
                              std::pair{"output_per_mtok", &p.output_per_mtok}}) {
      if (!price.contains(key)) continue;
      if (!price[key].is_number()) {
        return absl::InvalidArgumentError(
            absl::StrCat("price of ", model, ": ", key, " is not a number"));
      }
      *field = price[key].get<double>();
    }
    table[model] = p;
  }
  return table;
}

CallAccounting::CallAccounting(CallLog* log, PriceTable prices, prometheus::Registry& registry)
    : log_(log),
      prices_(std::move(prices)),
      calls_(prometheus::BuildCounter()
                 .Name("kforge_gateway_llm_calls_total")
                 .Help("Provider calls (HTTP attempts; offline proposals) by provider and status")
                 .Register(registry)),
      tokens_(prometheus::BuildCounter()
                  .Name("kforge_gateway_llm_tokens_total")
                  .Help("Tokens by provider and direction (in: prompt, out: completion)")
                  .Register(registry)),
      cost_(prometheus::BuildCounter()
                .Name("kforge_gateway_llm_cost_usd_total")
                .Help("Cost of provider calls in USD, from the price table")
                .Register(registry)),
      latency_(prometheus::BuildHistogram()
                   .Name("kforge_gateway_llm_call_seconds")
                   .Help("Latency of provider calls (one HTTP attempt) by provider")
                   .Register(registry)),
      accounting_errors_(prometheus::BuildCounter()
                             .Name("kforge_gateway_accounting_errors_total")
                             .Help("Call records that could not be stored in llm_calls")
                             .Register(registry)
                             .Add({})) {}

std::string CallAccounting::Record(const std::string& job_id, std::vector<AttemptRecord>& records) {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320};
  for (AttemptRecord& r : records) {
    auto price = prices_.find(r.model);
    if (price != prices_.end()) {
      r.cost_usd = (r.tokens_in * price->second.input_per_mtok +
                    r.tokens_out * price->second.output_per_mtok) /
                   1e6;
    }
    calls_.Add({{"provider", r.provider}, {"status", r.status}}).Increment();
    tokens_.Add({{"provider", r.provider}, {"direction", "in"}}).Increment(r.tokens_in);
    tokens_.Add({{"provider", r.provider}, {"direction", "out"}}).Increment(r.tokens_out);
    cost_.Add({{"provider", r.provider}}).Increment(r.cost_usd);
    latency_.Add({{"provider", r.provider}}, kBuckets).Observe(r.latency_ms / 1000);
  }
  if (log_ == nullptr || records.empty()) return "";
  absl::StatusOr<std::vector<int64_t>> ids = log_->Insert(job_id, records);
  if (!ids.ok()) {
    accounting_errors_.Increment(static_cast<double>(records.size()));
    LogError("cannot store llm_calls rows", {{"error", ids.status().ToString()},
                                             {"job_id", job_id},
                                             {"rows", std::to_string(records.size())}});
    return "";
  }
  return std::to_string(ids->back());
}

absl::Status CallAccounting::CheckJob(const std::string& job_id) {
  if (log_ == nullptr || job_id.empty()) return absl::OkStatus();
  return log_->CheckJob(job_id);
}

}  // namespace kforge::gateway
