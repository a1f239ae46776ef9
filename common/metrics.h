// Prometheus metrics: one registry per process, served on /metrics by an embedded HTTP
// exposer (prometheus-cpp).
//
// Thread-safety: the registry and the metric families are thread-safe (prometheus-cpp).
// Lifetime: MetricsServer must outlive every metric created from its registry.
#ifndef KFORGE_COMMON_METRICS_H_
#define KFORGE_COMMON_METRICS_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "prometheus/registry.h"

namespace prometheus {
class Exposer;
}

namespace kforge {

class MetricsServer {
 public:
  MetricsServer();
  ~MetricsServer();
  // Serves /metrics on `address` ("127.0.0.1:0" picks a free port). An empty address keeps
  // the registry without serving it (tests).
  absl::Status Start(const std::string& address);
  int port() const { return port_; }
  prometheus::Registry& registry() { return *registry_; }
  std::shared_ptr<prometheus::Registry> shared_registry() { return registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

}  // namespace kforge

#endif  // KFORGE_COMMON_METRICS_H_
