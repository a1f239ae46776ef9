#include "gpu_worker/worker.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/base/log.h"
#include "gpu_worker/builders.h"
#include "gpu_worker/coordinator_session.h"
#include "gpu_worker/gpu_monitor.h"
#include "gpu_worker/grpc_coordinator_link.h"
#include "gpu_worker/lease_queue.h"
#include "gpu_worker/sandbox_evaluator.h"
#include "gpu_worker/slot_metrics.h"
#include "gpu_worker/slots.h"
#include "prometheus/counter.h"

namespace kforge {

Worker::Worker(WorkerOptions options, prometheus::Registry& metrics)
    : options_(std::move(options)), metrics_(metrics) {
  if (options_.facts.hostname().empty()) {
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    options_.facts.set_hostname(host);
  }
}

std::vector<std::string> SlotDevices(const WorkerOptions& options) {
  const int lanes = std::max(options.lanes_per_gpu, 1);
  std::vector<std::string> devices;
  for (int slot = 0; slot < static_cast<int>(options.facts.slots()); ++slot) {
    devices.push_back(options.cpu_mode ? "cpu" : "cuda:" + std::to_string(slot / lanes));
  }
  return devices;
}

void Worker::Run(const std::atomic<bool>& stop) {
  const int slots = static_cast<int>(options_.facts.slots());
  const int lanes = std::max(options_.lanes_per_gpu, 1);
  const std::vector<std::string> devices = SlotDevices(options_);
  std::vector<std::string> bus_ids;  // of each slot's GPU
  for (int slot = 0; slot < slots; ++slot) {
    if (slot / lanes < static_cast<int>(options_.gpu_pci_bus_ids.size())) {
      bus_ids.push_back(options_.gpu_pci_bus_ids[slot / lanes]);
    }
  }
  std::unique_ptr<GpuMonitor> gpu_monitor;
  if (!options_.cpu_mode && bus_ids.size() == devices.size()) {
    gpu_monitor = GpuMonitor::Open(bus_ids);
  }
  if (!options_.cpu_mode && !gpu_monitor) {
    LogWarning("no GPU utilisation metrics: NVML or the slots' PCI bus ids are not available");
  }
  SlotMetrics slot_metrics(metrics_, options_.facts.gpu_type(), devices, gpu_monitor.get(), [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  });
  std::atomic<bool> sampler_stop{false};
  std::thread sampler([&] {
    const auto period = std::chrono::milliseconds(
        static_cast<int>(std::max(0.05, options_.metrics_sample_s) * 1000));
    while (!sampler_stop) {
      slot_metrics.Sample();
      for (auto waited = std::chrono::milliseconds(0); waited < period && !sampler_stop;
           waited += std::chrono::milliseconds(50)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  });

  auto& evaluations = prometheus::BuildCounter()
                          .Name("kforge_worker_evaluations_total")
                          .Help("Evaluations run by this worker, by verdict")
                          .Register(metrics_);
  const int prefetch = std::max(options_.prefetch, 0);
  LeaseQueue leases(slots);
  GrpcCoordinatorLink link(options_.coordinator, {options_.token, options_.tls});
  SessionOptions session_options;
  session_options.facts = options_.facts;
  session_options.prefetch = prefetch;
  CoordinatorSession session(link, leases, std::move(session_options));
  SandboxEvaluator evaluator(options_);
  Slots slot_threads(leases, evaluator, session, devices, metrics_, evaluations, &slot_metrics);
  // A drain hands the queued leases back: their builds are stopped, not finished.
  Builders builders(prefetch, options_.arch, leases, evaluator, session, stop, metrics_,
                    evaluations);
  slot_threads.Start();
  builders.Start();

  session.Run(stop);

  leases.Close();
  slot_threads.Join();
  builders.Join();
  sampler_stop = true;
  sampler.join();
  LogInfo("drained");
}

}  // namespace kforge
