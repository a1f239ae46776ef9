// kforge-dispatch-bench: dispatch throughput and lease latency of a running coordinator with
// simulated workers whose evaluations take no time.
//
// It registers --workers workers (gpu type --gpu_type, --slots each), opens one
// WorkerService.Connect stream per worker over --channels loopback connections, submits a
// warm-up batch, then --evaluations evaluations in batches of --batch_size through
// JobService.EvaluateBatch (at most --concurrent_batches streams open) and reads every stream
// to its end. Prints a human table and one JSON line starting with {"bench":"dispatch".
// See dispatch_recorder.h for what each latency means.
//
// Exit codes: 0 done, 1 an RPC failed, 2 bad flags, 3 not finished within --max_seconds.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "common/config.h"
#include "common/service.h"
#include "coordinator/bench/batch_client.h"
#include "coordinator/bench/bench_workload.h"
#include "coordinator/bench/delay_scheduler.h"
#include "coordinator/bench/dispatch_recorder.h"
#include "coordinator/bench/sim_worker.h"
#include "grpcpp/grpcpp.h"
#include "kforge/v1/jobs.grpc.pb.h"
#include "kforge/v1/worker.grpc.pb.h"

ABSL_FLAG(std::string, coordinator, "127.0.0.1:50051", "coordinator gRPC address");
ABSL_FLAG(int, workers, 200, "simulated workers");
ABSL_FLAG(int, slots, 1, "slots per simulated worker");
ABSL_FLAG(std::string, gpu_type, "sim", "GPU type the workers register and batches ask for");
ABSL_FLAG(int, evaluations, 20000, "evaluations in the measured phase");
ABSL_FLAG(int, batch_size, 1000, "candidates per EvaluateBatch call (the coordinator allows 1000)");
ABSL_FLAG(int, concurrent_batches, 0, "EvaluateBatch streams open at once; 0: all at once");
ABSL_FLAG(int, warmup_evaluations, -1, "evaluations before measuring; -1: workers x slots");
ABSL_FLAG(int, channels, 4, "gRPC connections the worker streams are spread over");
ABSL_FLAG(double, eval_ms, 0,
          "simulated evaluation time: results go back this long after "
          "the lease (0: at once, the no-op saturation test)");
ABSL_FLAG(bool, heartbeats, true, "heartbeat at the interval the coordinator asks for");
ABSL_FLAG(double, max_seconds, 120, "give up (exit 3) after this long");

namespace kforge {
namespace {

constexpr int kExitRpcError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitTimeout = 3;
constexpr double kRpcTimeoutS = 10;
// Heartbeats go out in this many staggered groups per interval.
constexpr int kHeartbeatGroups = 10;

int Fail(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "kforge-dispatch-bench: %s: %s\n", what.c_str(), status.ToString().c_str());
  return status.code() == absl::StatusCode::kDeadlineExceeded ? kExitTimeout : kExitRpcError;
}

std::chrono::system_clock::time_point RpcDeadline() {
  return std::chrono::system_clock::now() +
         std::chrono::milliseconds(static_cast<int64_t>(kRpcTimeoutS * 1000));
}

// A connection of its own: channels with different arguments share no subchannel.
std::shared_ptr<grpc::Channel> Channel(const std::string& address, int index) {
  grpc::ChannelArguments args;
  args.SetInt("kforge.dispatch_bench_channel", index);
  args.SetMaxReceiveMessageSize(64 << 20);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Sends every worker's heartbeat once per `interval`, in staggered groups, until stopped.
class HeartbeatTicker {
 public:
  HeartbeatTicker(std::vector<std::unique_ptr<SimWorker>>& workers, absl::Duration interval)
      : thread_([this, &workers, interval] {
          for (int tick = 0; !stop_.WaitForNotificationWithTimeout(interval / kHeartbeatGroups);
               ++tick) {
            for (size_t i = tick % kHeartbeatGroups; i < workers.size(); i += kHeartbeatGroups) {
              workers[i]->Heartbeat();
            }
          }
        }) {}
  ~HeartbeatTicker() {
    stop_.Notify();
    thread_.join();
  }

 private:
  absl::Notification stop_;
  std::thread thread_;
};

std::string ReportJson(const DispatchReport& r, int workers, int slots, int evaluations,
                       int batches, int window, double bench_cpu_s, bool complete) {
  double evals_per_s = r.elapsed_s > 0 ? static_cast<double>(r.records) / r.elapsed_s : 0;
  double worker_evals_per_s =
      r.results_elapsed_s > 0 ? static_cast<double>(r.results_sent) / r.results_elapsed_s : 0;
  return absl::StrFormat(
      R"({"bench":"dispatch","complete":%s,"workers":%d,"slots_per_worker":%d,"eval_ms":%g,)"
      R"("evaluations":%d,"batches":%d,"concurrent_batches":%d,"records":%d,)"
      R"("duplicate_records":%d,"retried":%d,"not_ok":%d,"leases":%d,"elapsed_s":%.3f,)"
      R"("evals_per_s":%.1f,"worker_evals_per_s":%.1f,"steady_evals_per_s":%.1f,)"
      R"("bench_cpu_s":%.2f,"lease_turnaround_ms":%s,"idle_turnaround_ms":%s,)"
      R"("queue_wait_ms":%s,"enqueue_ms":%s,"result_to_client_ms":%s})",
      complete ? "true" : "false", workers, slots, absl::GetFlag(FLAGS_eval_ms), evaluations,
      batches, window, r.records, r.duplicate_records, r.retried, r.not_ok, r.leases, r.elapsed_s,
      evals_per_s, worker_evals_per_s, r.steady_evals_per_s, bench_cpu_s, SummaryJson(r.turnaround),
      SummaryJson(r.idle_turnaround), SummaryJson(r.queue_wait), SummaryJson(r.enqueue),
      SummaryJson(r.result_to_client));
}

void PrintTable(const DispatchReport& r, int evaluations) {
  std::printf(
      "dispatch: %lld of %d evaluations read back in %.2f s: %.1f evaluations/s "
      "end to end, %.1f/s at the workers, %.1f/s steady (middle 80%% of results)\n",
      static_cast<long long>(r.records), evaluations, r.elapsed_s,
      r.elapsed_s > 0 ? static_cast<double>(r.records) / r.elapsed_s : 0,
      r.results_elapsed_s > 0 ? static_cast<double>(r.results_sent) / r.results_elapsed_s : 0,
      r.steady_evals_per_s);
  std::printf("%s\n", SummaryHeader().c_str());
  std::printf("%s\n", SummaryRow("lease turnaround (result->lease)", r.turnaround).c_str());
  std::printf("%s\n", SummaryRow("  the same, no committed work", r.idle_turnaround).c_str());
  std::printf("%s\n", SummaryRow("queue wait (submit->lease)", r.queue_wait).c_str());
  std::printf("%s\n", SummaryRow("enqueue (submit->batch id)", r.enqueue).c_str());
  std::printf("%s\n", SummaryRow("result to client (result->record)", r.result_to_client).c_str());
  std::printf(
      "checks: %lld duplicate records, %lld evaluations leased more than once, "
      "%lld not ok\n",
      static_cast<long long>(r.duplicate_records), static_cast<long long>(r.retried),
      static_cast<long long>(r.not_ok));
  if (absl::GetFlag(FLAGS_eval_ms) == 0) {
    std::printf(
        "note: no-op evaluations keep every slot waiting, so turnaround ~ slots / throughput "
        "(Little's law); --eval_ms measures it below saturation\n");
  }
}

int Run() {
  const std::string address = absl::GetFlag(FLAGS_coordinator);
  const int num_workers = absl::GetFlag(FLAGS_workers);
  const int slots = absl::GetFlag(FLAGS_slots);
  const int evaluations = absl::GetFlag(FLAGS_evaluations);
  const int batch_size = absl::GetFlag(FLAGS_batch_size);
  const int num_channels = absl::GetFlag(FLAGS_channels);
  const std::string gpu_type = absl::GetFlag(FLAGS_gpu_type);
  int warmup = absl::GetFlag(FLAGS_warmup_evaluations);
  if (warmup < 0) warmup = num_workers * slots;
  if (num_workers < 1 || slots < 1 || slots > 64 || evaluations < 1 || batch_size < 1 ||
      num_channels < 1 || absl::GetFlag(FLAGS_concurrent_batches) < 0 ||
      absl::GetFlag(FLAGS_eval_ms) < 0) {
    std::fprintf(stderr,
                 "kforge-dispatch-bench: --workers, --evaluations, --batch_size and "
                 "--channels must be positive, --slots 1..64, --eval_ms >= 0\n");
    return kExitUsage;
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_max_seconds));

  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (int i = 0; i < num_channels; ++i) {
    channels.push_back(Channel(address, i));
    if (!channels.back()->WaitForConnected(RpcDeadline())) {
      return Fail("connect", absl::UnavailableError("cannot reach " + address));
    }
  }
  auto jobs = v1::JobService::NewStub(channels[0]);

  v1::SubmitTaskRequest task_req;
  task_req.set_name("bench/dispatch_relu");
  task_req.set_source(BenchTaskSource());
  v1::SubmitTaskResponse task;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(RpcDeadline());
    grpc::Status s = jobs->SubmitTask(&ctx, task_req, &task);
    if (!s.ok()) return Fail("SubmitTask", FromGrpcStatus(s));
  }

  DispatchRecorder recorder;
  const auto eval_time = std::chrono::duration_cast<BenchClock::duration>(
      std::chrono::duration<double, std::milli>(absl::GetFlag(FLAGS_eval_ms)));
  auto delay = std::make_unique<DelayScheduler>();
  std::vector<std::unique_ptr<v1::WorkerService::Stub>> worker_stubs;
  for (auto& ch : channels) worker_stubs.push_back(v1::WorkerService::NewStub(ch));
  std::vector<std::unique_ptr<SimWorker>> workers;
  double heartbeat_interval_s = 0;
  for (int i = 0; i < num_workers; ++i) {
    v1::RegisterRequest req;
    req.mutable_facts()->set_hostname(absl::StrCat("sim-", i));
    req.mutable_facts()->set_gpu_type(gpu_type);
    req.mutable_facts()->set_gpu_name("simulated (kforge-dispatch-bench)");
    req.mutable_facts()->set_slots(static_cast<uint32_t>(slots));
    v1::RegisterResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(RpcDeadline());
    grpc::Status s = worker_stubs[i % num_channels]->Register(&ctx, req, &resp);
    if (!s.ok()) return Fail("Register", FromGrpcStatus(s));
    heartbeat_interval_s = resp.heartbeat_interval_s();
    workers.push_back(
        std::make_unique<SimWorker>(resp.worker_id(), slots, recorder, delay.get(), eval_time));
  }
  for (int i = 0; i < num_workers; ++i) workers[i]->Start(*worker_stubs[i % num_channels]);
  for (auto& w : workers) {
    if (!w->WaitHelloSent(absl::Now() + absl::Seconds(kRpcTimeoutS))) {
      return Fail("Connect", absl::UnavailableError("a worker stream failed before hello"));
    }
  }
  std::fprintf(stderr, "kforge-dispatch-bench: %d workers x %d slots connected to %s\n",
               num_workers, slots, address.c_str());

  std::unique_ptr<HeartbeatTicker> ticker;
  if (absl::GetFlag(FLAGS_heartbeats) && heartbeat_interval_s > 0) {
    ticker = std::make_unique<HeartbeatTicker>(workers, absl::Seconds(heartbeat_interval_s));
  }
  BatchClient client(*jobs, recorder);
  auto window_for = [](size_t batches) {
    int w = absl::GetFlag(FLAGS_concurrent_batches);
    return w == 0 ? static_cast<int>(batches) : w;
  };

  absl::Status status;
  if (warmup > 0) {
    recorder.StartPhase(BenchClock::now());
    auto batches = BenchBatches(task.task_id(), gpu_type, recorder.phase(), warmup, batch_size);
    status = client.Run(batches, window_for(batches.size()), deadline);
    if (!status.ok()) return Fail("warm-up", status);
    std::fprintf(stderr, "kforge-dispatch-bench: warm-up of %d evaluations done\n", warmup);
  }

  // The measured phase: requests are built before the clock starts.
  auto batches =
      BenchBatches(task.task_id(), gpu_type, recorder.phase() + 1, evaluations, batch_size);
  const int window = window_for(batches.size());
  double cpu_before = CpuSeconds();
  recorder.StartPhase(BenchClock::now());
  status = client.Run(batches, window, deadline);
  double bench_cpu_s = CpuSeconds() - cpu_before;
  DispatchReport report = recorder.Report();

  ticker.reset();
  delay.reset();
  for (auto& w : workers) w->Finish();
  for (auto& w : workers) (void)w->Wait(absl::Now() + absl::Seconds(5));

  PrintTable(report, evaluations);
  std::printf("%s\n", ReportJson(report, num_workers, slots, evaluations,
                                 static_cast<int>(batches.size()), window, bench_cpu_s, status.ok())
                          .c_str());
  std::fflush(stdout);
  if (!status.ok()) return Fail("measured phase", status);
  return 0;
}

}  // namespace
}  // namespace kforge

int main(int argc, char** argv) {
  kforge::InitFromFlagsAndEnv(
      argc, argv, "dispatch-bench",
      "kforge-dispatch-bench --coordinator=HOST:PORT [--workers=200] [--evaluations=20000]: "
      "dispatch throughput and lease latency with simulated no-op workers");
  return kforge::Run();
}
