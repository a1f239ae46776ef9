#include "gpu_worker/worker.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/base/log.h"
#include "common/channel.h"
#include "common/base/subprocess.h"
#include "common/result_json.h"
#include "gpu_worker/eval_server_client.h"
#include "gpu_worker/gpu_monitor.h"
#include "gpu_worker/sandbox.h"
#include "gpu_worker/slot_metrics.h"
#include "grpcpp/grpcpp.h"
#include "kforge/v1/worker.grpc.pb.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"

namespace kforge {
namespace {

using Clock = std::chrono::steady_clock;

v1::EvalResult Failure(const std::string& reason, const std::string& rule) {
  v1::EvalResult r;
  r.set_verdict(v1::VERDICT_RUNTIME_ERROR);
  r.set_reason(reason);
  r.set_rule(rule);
  return r;
}

// A lease waiting for a slot, and where its build ahead stands.
struct Pending {
  enum class Build { kNotStarted, kRunning, kDone };
  v1::Lease lease;
  Build build = Build::kNotStarted;
};

// Everything the stream threads share.
struct Shared {
  absl::Mutex mu;
  std::deque<Pending> queued ABSL_GUARDED_BY(mu);
  std::set<std::string> held ABSL_GUARDED_BY(mu);  // queued or running lease ids
  int running ABSL_GUARDED_BY(mu) = 0;
  std::vector<v1::WorkerMessage> outbox ABSL_GUARDED_BY(mu);  // results not yet written
  bool draining ABSL_GUARDED_BY(mu) = false;
  bool quit ABSL_GUARDED_BY(mu) = false;
};

// One connection to the coordinator.
class Session {
 public:
  Session(v1::WorkerService::Stub& stub) : stream_(stub.Connect(&ctx_)) {}
  bool Write(const v1::WorkerMessage& m) {
    absl::MutexLock lock(&mu_);
    return !broken_ && (broken_ = !stream_->Write(m), !broken_);
  }
  bool Read(v1::CoordinatorMessage* m) { return stream_->Read(m); }
  void Cancel() { ctx_.TryCancel(); }
  grpc::Status Finish() { return stream_->Finish(); }

 private:
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerMessage, v1::CoordinatorMessage>> stream_;
  absl::Mutex mu_;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
};

SandboxPolicy PolicyFor(const WorkerOptions& options) {
  SandboxPolicy policy;
  policy.scratch_root = options.scratch_root;
  policy.run_as_user = options.sandbox_user;
  policy.require_namespaces = options.require_namespaces;
  policy.view = options.sandbox_view;
  policy.executables = options.sandbox_executables;
  policy.max_output_bytes = 8 << 20;  // stdout carries the JSON result
  // Bounds a fork bomb while it runs (the PID namespace ends the rest afterwards). Counts the
  // threads of every process of the sandbox user: torch and CUDA start dozens per child.
  policy.processes = 4096;
  return policy;
}

// What the children inherit. TORCH_CUDA_ARCH_LIST (set by main from the GPU) makes
// load_inline's nvcc flags the same in a build ahead, which sees no GPU, as in the timed run.
std::vector<std::string> ExtraEnv(bool build_only = false) {
  std::vector<std::string> env;
  for (const char* name : {"KFORGE_PYTHONPATH", "CUDA_VISIBLE_DEVICES", "TORCH_CUDA_ARCH_LIST"}) {
    if (build_only && std::string(name) == "CUDA_VISIBLE_DEVICES") continue;
    if (const char* v = std::getenv(name)) env.push_back(std::string(name) + "=" + v);
  }
  if (build_only) env.push_back("CUDA_VISIBLE_DEVICES=");  // builds never touch a GPU
  return env;
}

}  // namespace

absl::Status CheckSandbox(const WorkerOptions& options) {
  SandboxPolicy policy = PolicyFor(options);
  policy.wall_limit_s = 60;
  SubprocessResult r = RunSandboxed(policy, {options.eval_binary, "--help"}, ExtraEnv());
  if (r.Succeeded()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "a sandboxed child cannot run " + options.eval_binary + " as user '" +
      options.sandbox_user + "' (" + r.Describe() + "): " + r.error + r.stderr_data.substr(0, 500) +
      "; make the binary, its libraries and the cache readable by that user, or run the "
      "worker with --sandbox_user= to keep its own user");
}

double EvaluationWallLimitS(const v1::EvalRequest& request, double extra_wall_s) {
  const auto& lim = request.limits();
  double limit = (lim.build_s() > 0 ? lim.build_s() : 120) + extra_wall_s;
  if (!request.build_only()) {
    limit += (lim.correctness_s() > 0 ? lim.correctness_s() : 120) +
             (lim.timing_s() > 0 ? lim.timing_s() : 60) + 180;
  }
  return limit;
}

v1::EvalResult RunEvaluation(const WorkerOptions& options, v1::EvalRequest request,
                             const std::string& device, const std::atomic<bool>* cancel) {
  if (cancel && cancel->load()) return Failure("cancelled before it started", "cancelled");
  request.set_device(device);
  // The request goes in on stdin, the JSON result comes back on stdout: no files to share
  // with a child that may run as another user.
  std::vector<std::string> argv = {options.eval_binary, "--request", "-"};
  if (!options.cache_dir.empty()) {
    argv.push_back("--cache-dir");
    argv.push_back(options.cache_dir);
  }
  SandboxPolicy policy = PolicyFor(options);
  policy.wall_limit_s = EvaluationWallLimitS(request, options.extra_wall_s);
  const std::vector<std::string> env = ExtraEnv(request.build_only());
  // One fork server per slot thread (eval_server_client.h); KFORGE_EVAL_SERVER=off disables it.
  const char* use_server = std::getenv("KFORGE_EVAL_SERVER");
  if (!use_server || std::string(use_server) != "off") {
    thread_local std::unique_ptr<EvalServerClient> server;
    if (!server) {
      server = std::make_unique<EvalServerClient>(
          EvalServerConfig{policy, options.eval_binary, options.cache_dir, env});
    }
    std::string why;
    bool cancelled = false;
    if (auto result = server->Evaluate(request, policy.wall_limit_s, &why, cancel, &cancelled)) {
      return *result;
    }
    if (cancelled) return Failure("cancelled: " + why, "cancelled");
    LogWarning("fork server unavailable, evaluating in a one-shot child", {{"why", why}});
  }
  SubprocessResult run = RunSandboxed(policy, argv, env, request.SerializeAsString());
  v1::EvalResult result;
  std::string error;
  if (run.Succeeded() && ResultFromJson(run.stdout_data, &result, &error)) return result;
  std::string tail = run.stderr_data.size() > 2000
                         ? run.stderr_data.substr(run.stderr_data.size() - 2000)
                         : run.stderr_data;
  return Failure("kforge-eval produced no result (" + run.Describe() + "): " + tail,
                 run.timed_out ? "worker_timeout" : "engine_error");
}

Worker::Worker(WorkerOptions options, prometheus::Registry& metrics)
    : options_(std::move(options)), metrics_(metrics) {
  if (options_.facts.hostname().empty()) {
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    options_.facts.set_hostname(host);
  }
}

void Worker::Run(const std::atomic<bool>& stop) {
  auto& evaluations = prometheus::BuildCounter()
                          .Name("kforge_worker_evaluations_total")
                          .Help("Evaluations run by this worker, by verdict")
                          .Register(metrics_);
  auto& busy = prometheus::BuildGauge()
                   .Name("kforge_worker_slots_busy")
                   .Help("Slots running an evaluation")
                   .Register(metrics_)
                   .Add({});
  auto& duration = prometheus::BuildHistogram()
                       .Name("kforge_worker_evaluation_seconds")
                       .Help("Wall time of one evaluation child")
                       .Register(metrics_)
                       .Add({}, prometheus::Histogram::BucketBoundaries{0.5, 1, 2, 5, 10, 30, 60,
                                                                        120, 300, 600});
  auto& stages = prometheus::BuildHistogram()
                     .Name("kforge_worker_stage_seconds")
                     .Help("Engine stage durations (startup, build, correctness, timing)")
                     .Register(metrics_);
  const prometheus::Histogram::BucketBoundaries stage_buckets{0.01, 0.05, 0.1, 0.3, 1, 3,
                                                              10, 30, 100};
  auto observe_stages = [&](const v1::EvalResult& r) {
    const auto& st = r.stages();
    for (auto [name, value] : {std::pair<const char*, double>{"startup", st.startup_s()},
                               {"build", st.build_s()},
                               {"correctness", st.correctness_s()},
                               {"timing", st.timing_s()}}) {
      if (value > 0) stages.Add({{"stage", name}}, stage_buckets).Observe(value);
    }
  };
  auto channel = MakeChannel(options_.coordinator, {options_.token, options_.tls});
  auto stub = v1::WorkerService::NewStub(channel);
  Shared shared;
  absl::Mutex session_mu;
  std::shared_ptr<Session> session;  // guarded by session_mu

  auto current = [&] {
    absl::MutexLock lock(&session_mu);
    return session;
  };
  // Writes a message on the current stream; results that cannot be written wait in the outbox.
  auto deliver = [&](const v1::WorkerMessage& m) {
    auto s = current();
    if (s && s->Write(m)) return;
    absl::MutexLock lock(&shared.mu);
    shared.outbox.push_back(m);
  };
  // Answers a lease counted in `shared.running`: no longer held once answered (the next lease
  // may arrive as soon as the result does), running until delivered (a drain waits for it).
  auto answer = [&](const std::string& lease_id, v1::EvalResult result) {
    evaluations.Add({{"verdict", VerdictName(result.verdict())}}).Increment();
    v1::WorkerMessage m;
    m.mutable_result()->set_lease_id(lease_id);
    *m.mutable_result()->mutable_result() = std::move(result);
    {
      absl::MutexLock lock(&shared.mu);
      shared.held.erase(lease_id);
    }
    deliver(m);
    absl::MutexLock lock(&shared.mu);
    --shared.running;
  };

  const int slots = static_cast<int>(options_.facts.slots());
  std::vector<std::string> devices;
  for (int slot = 0; slot < slots; ++slot) {
    devices.push_back(options_.cpu_mode ? "cpu" : "cuda:" + std::to_string(slot));
  }
  std::unique_ptr<GpuMonitor> gpu_monitor;
  if (!options_.cpu_mode && options_.gpu_pci_bus_ids.size() >= devices.size()) {
    gpu_monitor = GpuMonitor::Open({options_.gpu_pci_bus_ids.begin(),
                                    options_.gpu_pci_bus_ids.begin() + slots});
  }
  if (!options_.cpu_mode && !gpu_monitor) {
    LogWarning("no GPU utilisation metrics: NVML or the slots' PCI bus ids are not available");
  }
  SlotMetrics slot_metrics(metrics_, options_.facts.gpu_type(), devices, gpu_monitor.get(),
                           [] { return std::chrono::duration<double>(
                                    Clock::now().time_since_epoch()).count(); });
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

  std::vector<std::thread> slot_threads;
  for (int slot = 0; slot < slots; ++slot) {
    slot_threads.emplace_back([&, slot] {
      const std::string& device = devices[static_cast<size_t>(slot)];
      while (true) {
        v1::Lease lease;
        bool built_ahead = false;
        {
          absl::MutexLock lock(&shared.mu);
          // A built lease first, else the oldest not being built; one whose build is running
          // is waited for rather than built twice.
          auto pick = [&]() ABSL_SHARED_LOCKS_REQUIRED(shared.mu) {
            auto first_not_started = shared.queued.end();
            for (auto it = shared.queued.begin(); it != shared.queued.end(); ++it) {
              if (it->build == Pending::Build::kDone) return it;
              if (it->build == Pending::Build::kNotStarted &&
                  first_not_started == shared.queued.end()) {
                first_not_started = it;
              }
            }
            return first_not_started;
          };
          auto ready = [&]() ABSL_SHARED_LOCKS_REQUIRED(shared.mu) {
            return shared.quit || pick() != shared.queued.end();
          };
          shared.mu.Await(absl::Condition(&ready));
          auto it = pick();
          if (it == shared.queued.end()) return;
          lease = std::move(it->lease);
          built_ahead = it->build == Pending::Build::kDone;
          shared.queued.erase(it);
          ++shared.running;
        }
        busy.Increment();
        slot_metrics.Begin(slot);
        LogInfo("evaluation started", {{"lease_id", lease.lease_id()},
                                       {"evaluation_id", lease.evaluation_id()},
                                       {"slot", std::to_string(slot)},
                                       {"device", device},
                                       {"built_ahead", built_ahead ? "true" : "false"}});
        auto t0 = Clock::now();
        v1::EvalResult result = RunEvaluation(options_, lease.request(), device);
        double secs = std::chrono::duration<double>(Clock::now() - t0).count();
        duration.Observe(secs);
        observe_stages(result);
        busy.Decrement();
        slot_metrics.End(slot);
        LogInfo("evaluation done", {{"lease_id", lease.lease_id()},
                                    {"evaluation_id", lease.evaluation_id()},
                                    {"slot", std::to_string(slot)},
                                    {"device", device},
                                    {"verdict", VerdictName(result.verdict())},
                                    {"seconds", std::to_string(secs)}});
        answer(lease.lease_id(), std::move(result));
      }
    });
  }

  // Builders: each takes the oldest lease that no idle slot is about to take, runs
  // kforge-eval --build-only on the CPUs (filling the caches the timed run reads), and marks it
  // built. A compile error or a rejection is final: it goes back as the result, and no slot
  // spends GPU time on it.
  auto& builds = prometheus::BuildCounter()
                     .Name("kforge_worker_builds_ahead_total")
                     .Help("Builds ahead of the slots, by outcome (built, the final verdict, or "
                           "cancelled by a drain)")
                     .Register(metrics_);
  auto& build_seconds = prometheus::BuildHistogram()
                            .Name("kforge_worker_build_ahead_seconds")
                            .Help("Wall time of one build ahead")
                            .Register(metrics_)
                            .Add({}, stage_buckets);
  if (options_.prefetch > 0) {  // exported from the start: dashboards read 0, not "no data"
    for (const char* outcome : {"built", "compile_error", "rejected", "cancelled"}) {
      builds.Add({{"outcome", outcome}});
    }
  }
  std::vector<std::thread> builder_threads;
  for (int b = 0; b < std::max(options_.prefetch, 0); ++b) {
    builder_threads.emplace_back([&] {
      while (true) {
        v1::Lease lease;
        {
          absl::MutexLock lock(&shared.mu);
          auto pick = [&]() ABSL_SHARED_LOCKS_REQUIRED(shared.mu) {
            int idle = slots - shared.running;  // the oldest leases are theirs
            for (auto it = shared.queued.begin(); it != shared.queued.end(); ++it) {
              if (it->build != Pending::Build::kNotStarted) continue;
              if (idle-- > 0) continue;
              return it;
            }
            return shared.queued.end();
          };
          auto ready = [&]() ABSL_SHARED_LOCKS_REQUIRED(shared.mu) {
            return shared.quit || pick() != shared.queued.end();
          };
          shared.mu.Await(absl::Condition(&ready));
          if (shared.quit) return;
          auto it = pick();
          it->build = Pending::Build::kRunning;
          lease = it->lease;
        }
        LogInfo("build ahead started", {{"lease_id", lease.lease_id()},
                                        {"evaluation_id", lease.evaluation_id()}});
        v1::EvalRequest request = lease.request();
        request.set_build_only(true);
        request.set_arch(options_.arch);
        auto t0 = Clock::now();
        // A drain hands the queued leases back: their builds are stopped, not finished.
        v1::EvalResult result = RunEvaluation(options_, request, "cpu", &stop);
        double secs = std::chrono::duration<double>(Clock::now() - t0).count();
        if (result.rule() == "cancelled") {
          builds.Add({{"outcome", "cancelled"}}).Increment();
          LogInfo("build ahead cancelled", {{"lease_id", lease.lease_id()},
                                            {"evaluation_id", lease.evaluation_id()},
                                            {"seconds", std::to_string(secs)}});
          continue;
        }
        build_seconds.Observe(secs);
        // Final only what cannot depend on the GPU or on the reference: compiler errors and
        // the static rules (decided before loading: empty stage). A rejection while building
        // (global_switch, say) is left to the slot, whose snapshot includes the reference.
        const bool final = result.verdict() == v1::VERDICT_COMPILE_ERROR ||
                           (result.verdict() == v1::VERDICT_REJECTED && result.stage().empty());
        const char* outcome = final ? VerdictName(result.verdict()) : "built";
        builds.Add({{"outcome", outcome}}).Increment();
        LogInfo("build ahead done", {{"lease_id", lease.lease_id()},
                                     {"evaluation_id", lease.evaluation_id()},
                                     {"outcome", outcome},
                                     {"seconds", std::to_string(secs)}});
        bool deliver_result = false;
        {
          absl::MutexLock lock(&shared.mu);
          for (auto it = shared.queued.begin(); it != shared.queued.end(); ++it) {
            if (it->lease.lease_id() != lease.lease_id()) continue;
            // Still ours (a drain hands queued leases back meanwhile).
            if (final) {
              shared.queued.erase(it);
              ++shared.running;  // answered like a slot's result
              deliver_result = true;
            } else {
              it->build = Pending::Build::kDone;
            }
            break;
          }
        }
        if (deliver_result) answer(lease.lease_id(), std::move(result));
      }
    });
  }

  double backoff_s = 0.2;
  bool drained = false;
  std::string worker_id;  // kept across reconnects, so results of earlier leases still count
  double heartbeat_interval_s = 2;
  auto drain_deadline = Clock::time_point::max();
  while (!drained) {
    if (stop && drain_deadline == Clock::time_point::max()) {
      drain_deadline = Clock::now() + std::chrono::seconds(60);
    }
    {
      absl::MutexLock lock(&shared.mu);  // draining with nothing left to deliver: done
      if (stop && shared.running == 0 && shared.queued.empty() && shared.outbox.empty()) break;
    }
    // Disconnected while draining: keep trying to deliver for a while, then leave the leases
    // to expire (they run again elsewhere; nothing is lost).
    if (Clock::now() > drain_deadline) {
      absl::MutexLock lock(&shared.mu);
      LogWarning("giving up on delivering results while draining; their leases will expire "
                 "and run again elsewhere",
                 {{"undelivered", std::to_string(shared.outbox.size())}});
      break;
    }
    if (worker_id.empty()) {
      v1::RegisterRequest reg;
      *reg.mutable_facts() = options_.facts;
      v1::RegisterResponse reg_resp;
      grpc::ClientContext reg_ctx;
      reg_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      grpc::Status rs = stub->Register(&reg_ctx, reg, &reg_resp);
      if (!rs.ok()) {
        const bool refused = rs.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
                             rs.error_code() == grpc::StatusCode::PERMISSION_DENIED;
        LogWarning(refused ? "the coordinator refused the registration; retrying"
                           : "cannot reach the coordinator; retrying",
                   {{"error", rs.error_message()}, {"backoff_s", std::to_string(backoff_s)}});
        for (double w = 0; w < backoff_s; w += 0.05) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        backoff_s = std::min(backoff_s * 2, 10.0);
        continue;
      }
      worker_id = reg_resp.worker_id();
      if (reg_resp.heartbeat_interval_s() > 0) heartbeat_interval_s = reg_resp.heartbeat_interval_s();
    }
    auto s = std::make_shared<Session>(*stub);
    {
      absl::MutexLock lock(&session_mu);
      session = s;
    }
    v1::WorkerMessage hello;
    hello.mutable_hello()->set_worker_id(worker_id);
    hello.mutable_hello()->set_prefetch(static_cast<uint32_t>(std::max(options_.prefetch, 0)));
    {
      absl::MutexLock lock(&shared.mu);
      for (const auto& id : shared.held) hello.mutable_hello()->add_held_lease_ids(id);
    }
    s->Write(hello);
    LogInfo("connected", {{"worker_id", worker_id}});
    // Results finished while disconnected go first.
    std::vector<v1::WorkerMessage> pending;
    {
      absl::MutexLock lock(&shared.mu);
      pending.swap(shared.outbox);
    }
    for (const auto& m : pending) deliver(m);

    std::atomic<bool> session_over{false};
    std::thread heartbeat([&] {
      double interval = heartbeat_interval_s;
      bool announced_drain = false;
      auto next = Clock::now();
      while (!session_over) {
        bool draining_now = stop.load();
        if (Clock::now() >= next || (draining_now && !announced_drain)) {
          v1::WorkerMessage hb;
          std::vector<v1::Lease> to_release;
          {
            absl::MutexLock lock(&shared.mu);
            if (draining_now && !shared.draining) {
              shared.draining = true;
              for (const auto& p : shared.queued) to_release.push_back(p.lease);
              for (const auto& l : to_release) shared.held.erase(l.lease_id());
              shared.queued.clear();
            }
            for (const auto& id : shared.held) hb.mutable_heartbeat()->add_lease_ids(id);
            hb.mutable_heartbeat()->set_draining(shared.draining);
            int capacity = slots + std::max(options_.prefetch, 0);
            hb.mutable_heartbeat()->set_free_slots(
                shared.draining
                    ? 0
                    : static_cast<uint32_t>(std::max(capacity - static_cast<int>(shared.held.size()), 0)));
          }
          s->Write(hb);
          for (const auto& l : to_release) {
            v1::WorkerMessage rel;
            rel.mutable_release()->set_lease_id(l.lease_id());
            rel.mutable_release()->set_reason("worker draining");
            s->Write(rel);
          }
          announced_drain = draining_now;
          next = Clock::now() + std::chrono::milliseconds(static_cast<int>(interval * 1000));
        }
        if (draining_now) {
          absl::MutexLock lock(&shared.mu);
          if (shared.running == 0 && shared.queued.empty() && shared.outbox.empty()) {
            s->Cancel();  // drained: end the stream
            return;
          }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });

    v1::CoordinatorMessage msg;
    bool got_any = false;
    while (s->Read(&msg)) {
      got_any = true;
      backoff_s = 0.2;
      if (msg.has_result_refused()) {
        LogError("result refused by the coordinator",
                 {{"lease_id", msg.result_refused().lease_id()},
                  {"reason", msg.result_refused().reason()}});
        continue;
      }
      if (!msg.has_lease()) continue;
      absl::MutexLock lock(&shared.mu);
      if (shared.draining) {
        v1::WorkerMessage rel;
        rel.mutable_release()->set_lease_id(msg.lease().lease_id());
        rel.mutable_release()->set_reason("worker draining");
        s->Write(rel);
        continue;
      }
      shared.held.insert(msg.lease().lease_id());
      shared.queued.push_back(Pending{msg.lease()});
      LogInfo("lease received", {{"lease_id", msg.lease().lease_id()},
                                 {"evaluation_id", msg.lease().evaluation_id()},
                                 {"held", std::to_string(shared.held.size())}});
    }
    session_over = true;
    heartbeat.join();
    s->Cancel();
    grpc::Status fin = s->Finish();
    {
      absl::MutexLock lock(&session_mu);
      session.reset();
    }
    {
      absl::MutexLock lock(&shared.mu);
      drained = stop && shared.running == 0 && shared.queued.empty() && shared.outbox.empty();
    }
    if (!drained) {
      LogWarning("stream to the coordinator ended; reconnecting",
                 {{"error", fin.error_message()}, {"backoff_s", std::to_string(backoff_s)}});
      // A coordinator that no longer knows this worker (its row is gone), or knows it under
      // another identity (a new token), asks for a new registration; anything else keeps
      // the id.
      if (fin.error_code() == grpc::StatusCode::NOT_FOUND ||
          fin.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
        worker_id.clear();
      }
      if (!got_any) {
        for (double w = 0; w < backoff_s; w += 0.05) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        backoff_s = std::min(backoff_s * 2, 10.0);
      }
    }
  }
  {
    absl::MutexLock lock(&shared.mu);
    shared.quit = true;
    shared.queued.clear();
  }
  for (auto& t : slot_threads) t.join();
  for (auto& t : builder_threads) t.join();
  sampler_stop = true;
  sampler.join();
  LogInfo("drained");
}

}  // namespace kforge
