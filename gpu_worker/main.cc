// kforge-worker: runs evaluations for the coordinator, one kforge-eval child per evaluation.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/base/files.h"
#include "common/base/log.h"
#include "common/config.h"
#include "common/secrets.h"
#include "common/service.h"
#include "gpu_worker/eval_view.h"
#include "gpu_worker/gpu_facts.h"
#include "gpu_worker/sandbox.h"
#include "gpu_worker/sandbox_evaluator.h"
#include "gpu_worker/worker.h"

ABSL_FLAG(std::string, coordinator, "localhost:50051", "coordinator gRPC address");
ABSL_FLAG(std::string, token_file, "",
          "a file holding the worker's API token (role worker) for the coordinator");
ABSL_FLAG(std::string, grpc_address, "0.0.0.0:50071", "where to serve health");
ABSL_FLAG(std::string, metrics_address, "0.0.0.0:9466", "where to serve /metrics");
ABSL_FLAG(std::string, ready_file, "", "write bound ports here once serving");
ABSL_FLAG(std::string, gpu_type, "auto",
          "scheduling type this worker serves: auto (from nvidia-smi; cpu when there is no GPU), "
          "cpu, or a name such as H200 (with --device cpu to emulate a pool in tests)");
ABSL_FLAG(std::string, device, "auto", "auto, cuda or cpu: where the evaluations run");
ABSL_FLAG(int, slots, 0,
          "devices the worker runs evaluations on (0: every GPU, or 1 in CPU mode), each by "
          "--lanes_per_gpu slots");
ABSL_FLAG(int, lanes_per_gpu, 1,
          "evaluations sharing each slot's device, taking turns on it (docs/evaluation.md, "
          "\"GPU turns\"): one's CUDA contexts and start overlap another's turn; 1: no turns");
ABSL_FLAG(double, gpu_wait_s, 0,
          "with turns, how long an evaluation waits for its turn before it ends as "
          "gpu_turn_timeout (0: kforge-eval's default, 900 s)");
ABSL_FLAG(std::string, eval_binary, "", "kforge-eval (default: next to this binary)");
ABSL_FLAG(std::string, cache_dir, "/tmp/kforge-cache", "build cache shared by the children");
ABSL_FLAG(double, metrics_sample_s, 1,
          "how often the per-slot busy and GPU utilisation metrics are sampled");
ABSL_FLAG(int, prefetch, -1,
          "leases to hold beyond the slots and build ahead on the CPUs while the slots run "
          "(-1: one per slot with a GPU, none in CPU mode; 0: off)");
ABSL_FLAG(std::string, sandbox_user, "nobody",
          "when running as root, evaluations run as this user; empty keeps root (weaker)");
ABSL_FLAG(std::string, sandbox_namespaces, "auto",
          "required (the worker refuses to start when the sandbox cannot create its mount and "
          "PID namespaces: CAP_SYS_ADMIN), optional (go on without them, weaker), or auto "
          "(required when running as root)");
ABSL_FLAG(bool, sandbox_view, true,
          "with the mount namespace (root), evaluations see only the paths below, what "
          "kforge-eval reports it reads, their scratch directory and the build cache");
ABSL_FLAG(std::string, sandbox_read_only_paths, absl::StrJoin(kforge::DefaultReadOnlyPaths(), ","),
          "comma-separated system paths evaluations may read (those missing are left out)");
ABSL_FLAG(std::string, sandbox_devices, absl::StrJoin(kforge::DefaultDevices(), ","),
          "comma-separated device nodes in the evaluations' /dev (NAME* matches a prefix)");
ABSL_FLAG(std::string, sandbox_masked_paths, absl::StrJoin(kforge::DefaultMaskedPaths(), ","),
          "comma-separated paths hidden inside the read-only ones (secrets)");
ABSL_FLAG(std::string, sandbox_executables,
          absl::StrJoin(kforge::DefaultCompilerExecutables(), ","),
          "comma-separated files or directories whose programs evaluations may run besides "
          "kforge-eval (NAME* matches a prefix); empty: any program");

namespace kforge {
namespace {

std::string SiblingBinary(const char* name) {
  char self[4096] = {0};
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir = n > 0 ? std::string(self, static_cast<size_t>(n)) : "";
  dir = dir.substr(0, dir.find_last_of('/'));
  // Build tree: gpu_worker/kforge-worker and gpu_worker/eval/kforge-eval; installed: same dir.
  std::string in_build = dir + "/eval/" + name;
  return access(in_build.c_str(), X_OK) == 0 ? in_build : dir + "/" + name;
}

int Run() {
  WorkerOptions options;
  options.coordinator = absl::GetFlag(FLAGS_coordinator);
  options.tls = TlsFromFlags();
  if (const std::string file = absl::GetFlag(FLAGS_token_file); !file.empty()) {
    auto token = ReadSecretFile(file);
    if (!token.ok()) {
      LogError("cannot start", {{"error", std::string(token.status().message())}});
      return 1;
    }
    options.token = *token;
  }
  options.eval_binary = absl::GetFlag(FLAGS_eval_binary);
  if (options.eval_binary.empty()) options.eval_binary = SiblingBinary("kforge-eval");
  options.cache_dir = absl::GetFlag(FLAGS_cache_dir);
  options.sandbox_user = geteuid() == 0 ? absl::GetFlag(FLAGS_sandbox_user) : "";
  const std::string namespaces = absl::GetFlag(FLAGS_sandbox_namespaces);
  if (namespaces != "auto" && namespaces != "required" && namespaces != "optional") {
    LogError("--sandbox_namespaces must be auto, required or optional",
             {{"value", namespaces}});
    return 1;
  }
  options.require_namespaces =
      namespaces == "required" || (namespaces == "auto" && geteuid() == 0);
  options.sandbox_view.enabled = absl::GetFlag(FLAGS_sandbox_view);
  auto list = [](const std::string& flag) -> std::vector<std::string> {
    return absl::StrSplit(flag, ',', absl::SkipEmpty());
  };
  options.sandbox_view.read_only = list(absl::GetFlag(FLAGS_sandbox_read_only_paths));
  options.sandbox_view.devices = list(absl::GetFlag(FLAGS_sandbox_devices));
  options.sandbox_view.masked = list(absl::GetFlag(FLAGS_sandbox_masked_paths));
  options.sandbox_executables = list(absl::GetFlag(FLAGS_sandbox_executables));
  absl::Status engine_paths = AddEnginePaths(options.eval_binary, options.cache_dir,
                                             &options.sandbox_view, &options.sandbox_executables);
  if (!engine_paths.ok()) {
    LogError("cannot start", {{"error", std::string(engine_paths.message())}});
    return 1;
  }
  if (!options.cache_dir.empty()) {
    // Shared by children that may run as another user.
    mkdir(options.cache_dir.c_str(), 0777);
    chmod(options.cache_dir.c_str(), 01777);
    // What compiles killed before their rename left behind (no build runs for an hour).
    if (int n = RemoveStaleTemporaries(options.cache_dir, 3600); n > 0) {
      LogInfo("stale temporary files removed from the cache",
              {{"files", std::to_string(n)}, {"cache_dir", options.cache_dir}});
    }
  }
  if (absl::Status s = CheckSandbox(options); !s.ok()) {
    LogError("sandbox check failed", {{"error", std::string(s.message())}});
    return 1;
  }
  GpuFacts gpus = ProbeGpus();
  std::string device = absl::GetFlag(FLAGS_device);
  options.cpu_mode = device == "cpu" || (device == "auto" && gpus.count == 0);
  if (!options.cpu_mode && gpus.count == 0) {
    LogError("--device cuda but no GPU was found (nvidia-smi)");
    return 1;
  }
  v1::WorkerFacts& f = options.facts;
  std::string type = absl::GetFlag(FLAGS_gpu_type);
  f.set_gpu_type(type != "auto" ? type : (options.cpu_mode ? "cpu" : gpus.type));
  f.set_gpu_name(options.cpu_mode ? "cpu" : gpus.name);
  if (!options.cpu_mode) {  // in CPU mode the node's GPUs (if any) are not what it offers
    f.set_compute_capability(gpus.compute_capability);
    f.set_memory_bytes(gpus.memory_bytes);
    f.set_l2_cache_bytes(gpus.l2_cache_bytes);
    f.set_driver_version(gpus.driver_version);
    f.set_cuda_version(gpus.cuda_version);
    options.gpu_pci_bus_ids = gpus.pci_bus_ids;
  }
  int slots = absl::GetFlag(FLAGS_slots);
  options.lanes_per_gpu = absl::GetFlag(FLAGS_lanes_per_gpu);
  options.gpu_wait_s = absl::GetFlag(FLAGS_gpu_wait_s);
  if (options.lanes_per_gpu < 1 || options.gpu_wait_s < 0) {
    LogError("--lanes_per_gpu must be at least 1 and --gpu_wait_s not negative");
    return 1;
  }
  // Scratch and GPU turns' directories of a worker killed before it could remove them
  // (sandbox.h).
  SweepStaleScratch(options.scratch_root);
  const int devices = slots > 0 ? slots : (options.cpu_mode ? 1 : gpus.count);
  f.set_slots(static_cast<uint32_t>(devices * options.lanes_per_gpu));
  GpuLockDir gpu_lock_dir;  // claimed for the worker's life
  if (options.lanes_per_gpu > 1) {
    absl::StatusOr<GpuLockDir> dir = MakeGpuLockDir(options.scratch_root, SlotDevices(options));
    if (!dir.ok()) {
      LogError("cannot make the GPU turns' locks",
               {{"error", std::string(dir.status().message())}});
      return 1;
    }
    options.gpu_lock_dir = dir->path;
    gpu_lock_dir = std::move(*dir);
    if (geteuid() != 0) {
      LogWarning(
          "GPU turns without root: the evaluations run as this user with no file view, "
          "so one could open a GPU's lock file by its path and hold that GPU's turn; run "
          "the worker as root for the full sandbox",
          {{"gpu_turns_dir", options.gpu_lock_dir}});
    }
  }
  options.metrics_sample_s = absl::GetFlag(FLAGS_metrics_sample_s);
  int prefetch = absl::GetFlag(FLAGS_prefetch);
  options.prefetch = prefetch >= 0 ? prefetch : (options.cpu_mode ? 0 : static_cast<int>(f.slots()));
  if (!options.cpu_mode && f.compute_capability().empty() && options.prefetch > 0) {
    // A build ahead needs the slots' architecture; a compile error for a guessed one would
    // be final and wrong.
    LogWarning("building ahead is off: the GPUs' compute capability is unknown");
    options.prefetch = 0;
  }
  if (!options.cpu_mode && !f.compute_capability().empty()) {
    const std::string& cc = f.compute_capability();  // "9.0"
    std::string digits = cc;
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    options.arch = "sm_" + digits;
    // load_inline derives nvcc's -gencode flags from this when set, from the GPU otherwise:
    // set, the builds ahead (no GPU visible) and the timed runs build the same thing.
    setenv("TORCH_CUDA_ARCH_LIST", cc.c_str(), /*overwrite=*/0);
  }
  f.set_version("kforge 0.1");

  ServiceHost host({.name = "worker",
                    .grpc_address = absl::GetFlag(FLAGS_grpc_address),
                    .metrics_address = absl::GetFlag(FLAGS_metrics_address),
                    .ready_file = absl::GetFlag(FLAGS_ready_file),
                    .tls = TlsFromFlags()});
  if (absl::Status s = host.Start(); !s.ok()) {
    LogError("cannot start", {{"error", std::string(s.message())}});
    return 1;
  }
  LogInfo("worker starting", {{"gpu_type", f.gpu_type()},
                              {"gpu_name", f.gpu_name()},
                              {"compute_capability", f.compute_capability()},
                              {"memory_bytes", std::to_string(f.memory_bytes())},
                              {"l2_cache_bytes", std::to_string(f.l2_cache_bytes())},
                              {"driver_version", f.driver_version()},
                              {"cuda_version", f.cuda_version()},
                              {"slots", std::to_string(f.slots())},
                              {"lanes_per_gpu", std::to_string(options.lanes_per_gpu)},
                              {"gpu_turns_dir", options.gpu_lock_dir},
                              {"prefetch", std::to_string(options.prefetch)},
                              {"eval_binary", options.eval_binary}});
  // What confines the evaluations, as the sandbox will apply it (the view needs root).
  const bool root = geteuid() == 0;
  LogInfo("sandbox", {{"user", root && !options.sandbox_user.empty() ? options.sandbox_user
                                                                   : "(the worker's)"},
                      {"namespaces", options.require_namespaces ? "required" : "optional"},
                      {"view", root && options.sandbox_view.enabled ? "on" : "off"},
                      {"read_only_paths", std::to_string(options.sandbox_view.read_only.size())},
                      {"executables", options.sandbox_executables.empty()
                                          ? "any"
                                          : std::to_string(options.sandbox_executables.size())}});
  std::atomic<bool> stop{false};
  Worker worker(options, host.metrics().registry());
  std::thread runner([&] { worker.Run(stop); });
  std::thread signals([&] {
    int sig = WaitForTerminationSignal();
    LogInfo("draining", {{"signal", std::to_string(sig)}});
    stop = true;
  });
  runner.join();
  if (!stop) {
    // Run() only returns on its own after a drain; unblock the signal thread.
    kill(getpid(), SIGTERM);
  }
  signals.join();
  host.Shutdown();
  // The turns' locks: every slot's fork server is gone with the worker's slots.
  if (!options.gpu_lock_dir.empty()) {
    RemoveTree(AT_FDCWD, options.gpu_lock_dir);  // a leftover of empty files is harmless
  }
  return 0;
}

}  // namespace
}  // namespace kforge

int main(int argc, char** argv) {
  kforge::BlockTerminationSignals();
  kforge::InitFromFlagsAndEnv(argc, argv, "worker", "kforge-worker: runs evaluations");
  return kforge::Run();
}
