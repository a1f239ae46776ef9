#include "common/metrics.h"

#include <exception>

#include "absl/strings/str_cat.h"
#include "prometheus/exposer.h"

namespace kforge {

MetricsServer::MetricsServer() : registry_(std::make_shared<prometheus::Registry>()) {}
MetricsServer::~MetricsServer() = default;

absl::Status MetricsServer::Start(const std::string& address) {
  if (address.empty()) return absl::OkStatus();
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(address);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot serve /metrics on ", address, ": ",
                                               e.what()));
  }
  exposer_->RegisterCollectable(registry_);
  auto ports = exposer_->GetListeningPorts();
  if (!ports.empty()) port_ = ports.front();
  return absl::OkStatus();
}

}  // namespace kforge
