// kforge-eval: evaluates one candidate against one task and prints one JSON verdict.
//
//   kforge-eval --task TASK.py --candidate FILE [--dialect kernelbench|nvrtc|cpp]
//               [--device cuda[:N]|cpu] [--arch sm_XX] [--seed N] [--json OUT]
//               [--trials N] [--atol X] [--rtol X] [--min-samples N] [--max-rel-stderr X]
//               [--preroll-ms X] [--timing-clock activity|events]
//               [--build-timeout S] [--correctness-timeout S]
//               [--timing-timeout S] [--cache-dir DIR] [--request REQ.pb] [--result-pb OUT.pb]
//               [--build-only] [--keep-samples] [--policy strict|runtime]
//               [--numerics fp32|torch]
//   kforge-eval --serve stdio|FIFO_DIR [--answer pb|json] [--cache-dir DIR]
//               [--gpu-lock-fd N [--gpu-wait-s S]] [--clear-dev-shm]
//               (fork server; GPU turns: supervisor.h; /dev/shm: serve.h)
//
// Exit status: 0 whenever a verdict was produced (whatever it is), 2 for bad usage.
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>

#include "common/result_json.h"
#include "gpu_worker/eval/baseline.h"
#include "gpu_worker/eval/engine.h"
#include "gpu_worker/eval/engine_paths.h"
#include "gpu_worker/eval/reference_share.h"
#include "gpu_worker/eval/serve.h"
#include "gpu_worker/eval/static_checks.h"
#include "gpu_worker/eval/supervisor.h"

namespace {

constexpr char kUsage[] =
    "usage: kforge-eval --task TASK.py --candidate FILE [--dialect kernelbench|nvrtc|cpp]\n"
    "                   [--device cuda[:N]|cpu] [--arch sm_XX] [--seed N] [--json OUT]\n"
    "                   [--trials N] [--atol X] [--rtol X] [--min-samples N]\n"
    "                   [--max-rel-stderr X] [--preroll-ms X]\n"
    "                   [--timing-clock activity|events] [--build-timeout S]\n"
    "                   [--correctness-timeout S] [--timing-timeout S] [--cache-dir DIR]\n"
    "                   [--build-only] [--keep-samples] [--policy strict|runtime]\n"
    "                   [--numerics fp32|torch]\n"
    "       kforge-eval --request REQ.pb|- [--result-pb OUT.pb] [--json OUT] [--cache-dir DIR]\n"
    "                   [--build-only] [--keep-samples]\n"
    "       kforge-eval --baseline TASK_DIR [--device D] [--json OUT.jsonl] [--per-task-cap S]\n"
    "       kforge-eval --serve stdio|FIFO_DIR [--answer pb|json] [--cache-dir DIR]\n"
    "                   [--gpu-lock-fd N [--gpu-wait-s S]] [--clear-dev-shm]\n"
    "                   (fork server: framed\n"
    "                   EvalRequest in, EvalResult out; see gpu_worker/eval/serve.h)\n"
    "       kforge-eval --sandbox-paths  (the host paths it reads, for the worker's sandbox)\n"
    "Prints one JSON result (or writes it to --json OUT); exits 0 whenever it reached a\n"
    "verdict. See docs/evaluation.md.";

int Usage(const std::string& why) {
  std::fprintf(stderr, "kforge-eval: %s\n%s\n", why.c_str(), kUsage);
  return 2;
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

bool WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
  return static_cast<bool>(out);
}

}  // namespace

// OMP_WAIT_POLICY=PASSIVE and no OpenMP pinning in this process's environment: true when they
// already were; otherwise sets them and executes this program again (false if that failed).
bool ProgramEnvironmentSet(char** argv) {
  static const char* const kPins[] = {"OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY",
                                      "KMP_AFFINITY"};
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  bool set = policy != nullptr && std::string(policy) == "PASSIVE";
  for (const char* pin : kPins) set = set && std::getenv(pin) == nullptr;
  if (set) return true;
  setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  for (const char* pin : kPins) unsetenv(pin);
  execv("/proc/self/exe", argv);
  std::fprintf(stderr, "kforge-eval: cannot run itself again with OMP_WAIT_POLICY set: %s\n",
               std::strerror(errno));
  return false;
}

int main(int argc, char** argv) {
  using namespace kforge;
  auto process_start = std::chrono::steady_clock::now();
  // OpenMP's threads, in the judge and in the candidate process, sleep as soon as a parallel
  // region ends instead of spinning for a while, and none is pinned: a spinning idle thread of
  // one process slows the other's samples (in CPU mode an honest candidate's product took
  // 6 ms beside the judge's spinning threads, 2 ms without), and the candidate process may not
  // set the affinity of its other threads (its seccomp filter; docs/evaluation.md, "The
  // reference alone"). libgomp reads these when it is loaded, with LibTorch, before main: so
  // this process runs itself again once with them set.
  if (!ProgramEnvironmentSet(argv)) return 1;
  std::map<std::string, std::string> flags;
  bool build_only = false, keep_samples = false, clear_dev_shm = false;  // without a value
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s\n", kUsage);
      return 0;
    }
    if (a == "--sandbox-paths") {  // what the worker's sandbox must show (engine_paths.h)
      for (const std::string& path : eval::PathsTheEngineReads()) std::printf("%s\n", path.c_str());
      return 0;
    }
    if (a == "--build-only" || a == "--keep-samples") {
      (a == "--build-only" ? build_only : keep_samples) = true;
      continue;
    }
    if (a == "--clear-dev-shm") {
      clear_dev_shm = true;
      continue;
    }
    if (a.rfind("--", 0) != 0) return Usage("unexpected argument " + a);
    auto eq = a.find('=');
    if (eq != std::string::npos) {
      flags[a.substr(2, eq - 2)] = a.substr(eq + 1);
    } else if (i + 1 < argc) {
      flags[a.substr(2)] = argv[++i];
    } else {
      return Usage("flag " + a + " needs a value");
    }
  }
  // Every flag that takes a value, and whether the value must be a number: finite, not "abc"
  // silently read as 0 (the default).
  static const std::map<std::string, bool> kValueFlags = {
      {"task", false},          {"candidate", false},    {"dialect", false},
      {"device", false},        {"arch", false},         {"seed", true},
      {"json", false},          {"trials", true},        {"atol", true},
      {"rtol", true},           {"min-samples", true},   {"max-rel-stderr", true},
      {"preroll-ms", true},     {"build-timeout", true}, {"correctness-timeout", true},
      {"timing-timeout", true}, {"cache-dir", false},    {"request", false},
      {"result-pb", false},     {"baseline", false},     {"per-task-cap", true},
      {"serve", false},         {"answer", false},       {"timing-clock", false},
      {"policy", false},        {"numerics", false},     {"gpu-lock-fd", true},
      {"gpu-wait-s", true}};
  for (const auto& [k, v] : flags) {
    auto known = kValueFlags.find(k);
    if (known == kValueFlags.end()) return Usage("unknown flag --" + k);
    if (!known->second) continue;
    char* end = nullptr;
    errno = 0;
    double x = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(x)) {
      return Usage("flag --" + k + " needs a number, not '" + v + "'");
    }
  }
  auto num = [&](const char* name, double def) {
    auto it = flags.find(name);
    return it == flags.end() ? def : std::strtod(it->second.c_str(), nullptr);
  };

  if (flags.count("baseline")) {
    eval::BaselineOptions b;
    b.dir = flags["baseline"];
    b.device = flags.count("device") ? flags["device"] : "cuda";
    b.out_path = flags["json"];
    b.per_task_cap_s = num("per-task-cap", 2);
    b.events_clock = flags["timing-clock"] == "events";
    return eval::RunBaseline(b);
  }

  std::string cache_dir = flags.count("cache-dir") ? flags["cache-dir"] : "";
  if (cache_dir.empty()) {
    if (const char* env = std::getenv("KFORGE_CACHE_DIR")) cache_dir = env;
  }
  if (!flags.count("serve") && (flags.count("gpu-lock-fd") || flags.count("gpu-wait-s"))) {
    return Usage("--gpu-lock-fd and --gpu-wait-s are for --serve");
  }
  if (!flags.count("serve") && clear_dev_shm) return Usage("--clear-dev-shm is for --serve");
  if (flags.count("gpu-wait-s") && !(num("gpu-wait-s", 0) > 0)) {
    return Usage("--gpu-wait-s needs a number of seconds above 0");
  }
  if (flags.count("serve")) {
    eval::ServeOptions serve;
    serve.cache_dir = cache_dir;
    serve.fifo_dir = flags["serve"] == "stdio" ? "" : flags["serve"];
    serve.json_results = flags["answer"] == "json";
    serve.clear_dev_shm = clear_dev_shm;
    serve.turns.lock_fd = static_cast<int>(num("gpu-lock-fd", -1));
    serve.turns.wait_s = num("gpu-wait-s", serve.turns.wait_s);
    return eval::Serve(serve);
  }

  v1::EvalRequest req;
  if (flags.count("request")) {
    std::string bytes;
    bool read = true;
    if (flags["request"] == "-") {
      bytes.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    } else {
      read = ReadFile(flags["request"], &bytes);
    }
    if (!read || !req.ParseFromString(bytes)) {
      return Usage("cannot read an EvalRequest from " + flags["request"]);
    }
  } else {
    if (!flags.count("task") || !flags.count("candidate")) {
      return Usage("--task and --candidate are required");
    }
    std::string task, cand;
    if (!ReadFile(flags["task"], &task)) return Usage("cannot read task " + flags["task"]);
    if (!ReadFile(flags["candidate"], &cand)) {
      return Usage("cannot read candidate " + flags["candidate"]);
    }
    req.set_task_source(task);
    req.set_candidate_source(cand);
    req.set_task_name(flags["task"]);
    if (flags.count("dialect")) {
      v1::Dialect d;
      if (!ParseDialect(flags["dialect"], &d)) {
        return Usage("unknown dialect " + flags["dialect"]);
      }
      req.set_dialect(d);
    }
    req.set_device(flags.count("device") ? flags["device"] : "cuda");
    req.set_arch(flags["arch"]);
    req.set_seed(flags.count("seed") ? std::strtoull(flags["seed"].c_str(), nullptr, 10) : 0);
    req.set_correctness_trials(static_cast<uint32_t>(num("trials", 0)));
    req.set_atol(num("atol", 0));
    req.set_rtol(num("rtol", 0));
    req.set_min_samples(static_cast<uint32_t>(num("min-samples", 0)));
    req.set_max_rel_stderr(num("max-rel-stderr", 0));
    req.set_timing_preroll_ms(num("preroll-ms", 0));
    req.set_timing_clock(flags["timing-clock"]);  // checked by the engine (bad_request)
    req.set_policy(flags["policy"]);              // likewise
    req.set_numerics(flags["numerics"]);          // likewise
    req.mutable_limits()->set_build_s(num("build-timeout", 0));
    req.mutable_limits()->set_correctness_s(num("correctness-timeout", 0));
    req.mutable_limits()->set_timing_s(num("timing-timeout", 0));
  }

  if (build_only) req.set_build_only(true);
  if (keep_samples) req.set_keep_samples(true);

  eval::EngineContext ctx;
  ctx.process_start = process_start;
  ctx.cache_dir = cache_dir;
  eval::ClearSharedReference(&req);  // only a fork server shares (reference_share.h)
  v1::EvalResult result = eval::EvaluateSupervised(req, ctx);
  std::string json = ResultToJson(result);
  if (flags.count("result-pb") && !WriteFile(flags["result-pb"], result.SerializeAsString())) {
    std::fprintf(stderr, "kforge-eval: cannot write %s\n", flags["result-pb"].c_str());
  }
  if (flags.count("json")) {
    if (!WriteFile(flags["json"], json + "\n")) {
      std::fprintf(stderr, "kforge-eval: cannot write %s\n", flags["json"].c_str());
      return 1;
    }
  } else {
    std::printf("%s\n", json.c_str());
  }
  return 0;
}
