#include "gpu_worker/eval/engine.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <cuda_runtime_api.h>
#include <pybind11/embed.h>
#include <sys/prctl.h>
#include <torch/csrc/autograd/python_variable.h>

#include <cmath>
#include <deque>
#include <fstream>

#include "common/base/sha256.h"
#include "common/base/utf8.h"
#include "gpu_worker/eval/activity_trace.h"
#include "gpu_worker/eval/call_profile.h"
#include "gpu_worker/eval/candidate_client.h"
#include "gpu_worker/eval/candidate_files.h"
#include "gpu_worker/eval/compare.h"
#include "gpu_worker/eval/cpp_dialect.h"
#include "gpu_worker/eval/device_preroll.h"
#include "gpu_worker/eval/env_switch.h"
#include "gpu_worker/eval/model_io.h"
#include "gpu_worker/eval/own_kernels.h"
#include "gpu_worker/eval/process_tree.h"
#include "gpu_worker/eval/python_runtime.h"
#include "gpu_worker/eval/reference_share.h"
#include "gpu_worker/eval/runtime_rules.h"
#include "gpu_worker/eval/seeds.h"
#include "gpu_worker/eval/static_checks.h"
#include "gpu_worker/eval/system_info.h"
#include "gpu_worker/eval/timing.h"

namespace py = pybind11;

namespace kforge::eval {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kDefaultTrials = 5;
// The pre-roll of a correctness trial's call when it is activity-traced for the own-kernels
// rule (Trial): only the names of its kernels are read, so the pre-roll need only be there.
constexpr double kTracedTrialPrerollMs = 0.1;
// Timing inputs are fresh for every iteration when get_inputs() and the copy for the candidate
// take at most this long; otherwise up to kTimingInputSets sets rotate, fewer above
// kMaxTimingSetBytes.
constexpr double kFreshInputsMaxMs = 25;
constexpr int kTimingInputSets = 3;
constexpr int64_t kMaxTimingSetBytes = 4LL << 30;
// The device clock's least samples per input placement, for programs below kPlacementShortMs.
constexpr uint32_t kSamplesPerPlacement = 5;
constexpr double kPlacementShortMs = 0.1;
constexpr double kMaxPrerollMs = 5;  // EvalRequest.timing_preroll_ms
// The device clock's pre-roll: where it starts, how long it may grow, and how late the host
// may still launch after it ended before a sample is left out (device_preroll.h).
constexpr double kDevicePrerollMs = 0.5;
constexpr double kMaxDevicePrerollMs = 5;
constexpr double kLateHostToleranceMs = 0.01;
// The stop rules' relative standard error of the medians (EvalRequest.max_rel_stderr 0).
constexpr double kDeviceMaxRelStderr = 0.005;
constexpr double kCallMaxRelStderr = 0.01;
// How far each clock's medians move between processes (timing.h, BetweenProcesses), fitted on
// the H200 (docs/evaluation.md "Between processes"; scripts/between_processes.py). The call
// clock's medians move by some 46 us whatever the program's length plus 5% of the speedup:
// refitted in session 27 on sessions 22-23's repeats (174, the engine of today: the call clock's
// phase first, no MPS) and checked on session 25's (126), 5.6% outside where 25 us, the fit to
// sessions 9-11, left 11.9% outside. The device clock's move by about 0.25 us (sessions 9-11;
// conservative since: 1.7% outside over sessions 22-25). Other GPUs get the same until
// measured there; CPU mode none.
constexpr BetweenProcesses kCallBetween{0.05, 0.046, 0.5};
constexpr BetweenProcesses kDeviceBetween{0.005, 0.00025, 0.5};
// The slow stop (timing.h, TimingOptions::slow_below): a candidate each of whose samples is more
// than ten times the reference's slowest, after 5 of each, is not sampled further on that
// clock. Session 25: a corpus candidate of 1.2 s a call (speedup 0.0004) sampled 15 pairs in
// 22 s of its GPU turn, a third of a 60-candidate batch's turns.
constexpr double kSlowBelow = 0.1;
constexpr uint32_t kSlowMinSamples = 5;
constexpr uint32_t kCalibrationCalls = 30;  // after 3 warm-up calls
// The reference alone (Timing; docs/evaluation.md, "The reference alone"): once every process
// of the candidate is gone, at least this many samples of the reference by itself on each
// clock measured, in at most this share of that clock's budget; and how long the candidate's
// processes get to die.
constexpr uint32_t kAloneMinSamples = 10;
constexpr double kAloneBudgetShare = 0.1;  // taken from the phases beside the candidate
constexpr double kAloneWaitS = 10;
constexpr uint64_t kShareEvery = 4;  // a shared reference is timed in one of this many iterations
constexpr double kMinCallMs = 1e-3;  // a call-clock sample is never below 1 us

std::string FormatMs(double ms) {
  std::ostringstream s;
  s << ms;
  return s.str();
}

// `shared`: the reference's samples shared from an earlier evaluation that its statistics pooled
// first (TimingOutcome::shared_reference_ms), so samples_ms lists them first.
void KeepSamples(const ProgramSamples& p, TimingClock clock, int sets, v1::TimingStats* stats,
                 const std::vector<double>& shared = {}) {
  auto add = [](const std::vector<double>& v, google::protobuf::RepeatedField<double>* to) {
    to->Add(v.begin(), v.end());
  };
  add(shared, stats->mutable_samples_ms());
  add(p.ms, stats->mutable_samples_ms());
  add(p.tail_ms, stats->mutable_tail_samples_ms());
  if (clock == TimingClock::kActivity) {
    add(p.event_ms, stats->mutable_event_samples_ms());
    add(p.pre_ms, stats->mutable_pre_samples_ms());
    add(p.lat_ms, stats->mutable_lat_samples_ms());
    add(p.span_ms, stats->mutable_span_samples_ms());
    add(p.host_ms, stats->mutable_host_samples_ms());
  }
  stats->set_input_sets(static_cast<uint32_t>(sets));
}

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Adds `part` to a note, after "; " where it already says something.
void AddNote(std::string* note, const std::string& part) {
  *note += (note->empty() ? "" : "; ") + part;
}

// Where the correctness trials' time goes: StageDurations' correctness_* fields.
struct TrialTimes {
  double inputs = 0, reference = 0, poison = 0, candidate = 0, outputs = 0, inputs_unchanged = 0,
         compare = 0;
};

class Evaluation {
 public:
  Evaluation(const v1::EvalRequest& req, const EngineContext& ctx, StageReporter& reporter)
      : req_(req), ctx_(ctx), reporter_(reporter) {}

  v1::EvalResult Run() {
    result_.set_task_sha256(Sha256Hex(req_.task_source()));
    result_.set_candidate_sha256(Sha256Hex(req_.candidate_source()));
    v1::Dialect dialect = req_.dialect() != v1::DIALECT_UNSPECIFIED
                              ? req_.dialect()
                              : InferDialect(req_.candidate_source());
    result_.set_dialect(dialect);
    std::optional<Verdict> v = Pipeline(dialect);
    if (!v) v = Verdict{v1::VERDICT_OK, "correct on every trial and timed", ""};
    result_.set_verdict(v->verdict);
    // Fit for a string field and the results database (no NUL, valid UTF-8): a candidate's
    // exception text is any bytes, and a result the coordinator refuses is never stored.
    result_.set_reason(PrintableUtf8(v->reason));
    result_.set_rule(v->rule);
    if (v->verdict == v1::VERDICT_OK && req_.build_only()) {
      result_.set_stage("built");
      result_.clear_speedup();
      result_.clear_speedup_call();
    } else if (v->verdict == v1::VERDICT_OK) {
      result_.set_stage("done");
      result_.set_speedup(result_.reference().median_ms() / result_.candidate().median_ms());
    } else {
      result_.clear_speedup();
      result_.clear_speedup_device();
      result_.clear_speedup_call();
      result_.clear_speedup_ci_low();
      result_.clear_speedup_ci_high();
      result_.clear_speedup_call_ci_low();
      result_.clear_speedup_call_ci_high();
      result_.clear_speedup_device_ci_low();
      result_.clear_speedup_device_ci_high();
      result_.clear_speedup_call_between_sd();
      result_.clear_speedup_device_between_sd();
      result_.clear_reference_device_busy_ms();  // only an ok result has them
      result_.clear_candidate_device_busy_ms();
      result_.clear_speedup_device_busy();
      result_.clear_reference_device_span_ms();
      result_.clear_candidate_device_span_ms();
      result_.clear_speedup_device_span();
      result_.clear_reference_alone_call_ms();
      result_.clear_reference_alone_device_ms();
    }
    std::string native;
    if (client_ && client_->NativeCode(&native)) {
      result_.set_native_code(true);
      result_.set_native_code_detail(native);
    }
    result_.mutable_stages()->set_total_s(
        std::chrono::duration<double>(Clock::now() - ctx_.process_start).count());
    if (client_ && CallProfileOn()) {
      std::fputs((client_->CallProfileSummary() + ref_profile_.Summary()).c_str(), stderr);
    }
    FlushPythonOutput();
    // Killed, not waited for: its CUDA context is torn down while this process delivers the
    // result and leaves (Evaluate).
    if (client_) client_->KillWithoutWaiting();
    return result_;
  }

 private:
  // The process leaves with _exit: what the candidate printed must reach the capture pipe
  // (and the result's output_log) first.
  void FlushPythonOutput() {
    if (!Py_IsInitialized()) return;
    try {
      py::module_ sys = py::module_::import("sys");
      for (const char* stream : {"stdout", "stderr"}) {
        py::object s = sys.attr(stream);
        if (!s.is_none()) s.attr("flush")();
      }
    } catch (const py::error_already_set&) {
      // A candidate that replaced sys.stdout with something unflushable loses its output.
    }
  }

  void Enter(Stage s) {
    reporter_.Enter(s);
    result_.set_stage(StageName(s));
  }

  std::optional<Verdict> Pipeline(v1::Dialect dialect) {
    const std::string& policy = req_.policy();
    if (!policy.empty() && policy != "strict" && policy != "runtime") {
      return Verdict{v1::VERDICT_RUNTIME_ERROR,
                     "policy must be \"strict\" or \"runtime\", not \"" + policy + "\"",
                     "bad_request"};
    }
    if (!req_.numerics().empty() && req_.numerics() != "fp32" && req_.numerics() != "torch") {
      return Verdict{v1::VERDICT_RUNTIME_ERROR,
                     "numerics must be \"fp32\" or \"torch\", not \"" + req_.numerics() + "\"",
                     "bad_request"};
    }
    strict_ = policy == "strict";  // runtime unless asked (docs/evaluation.md, "The trust boundary")
    result_.set_policy(strict_ ? "strict" : "runtime");
    RuleViolation rv = CheckCandidateSource(req_.candidate_source(), dialect, req_.task_source());
    if (rv.fired() && strict_) {
      return Verdict{v1::VERDICT_REJECTED, rv.reason, rv.rule};
    }
    if (rv.fired()) {  // runtime: said, not enforced
      result_.set_strict_rule(rv.rule);
      result_.set_strict_reason(PrintableUtf8(rv.reason));
    }
    // Still single-threaded, before any task or candidate code: the last moment to write shared
    // cache entries, then the lock (candidate_files.h), which the candidate process inherits.
    files_ = CandidateFilesFor(ctx_.cache_dir, req_.task_source(), req_.candidate_source());
    if (dialect == v1::DIALECT_CPP) PrepareCppPch(CppConfig());  // a failure shows in the build
    LockToCandidateFiles(ctx_.cache_dir, &files_);
    Enter(Stage::kLoad);
    auto t = Clock::now();
    std::string error;
    if (!Py_IsInitialized()) {  // a fork server's child inherits a running interpreter
      interpreter_ = StartPython(&error);
      if (!interpreter_) return Verdict{v1::VERDICT_RUNTIME_ERROR, error, "engine_error"};
    }
    // Before the candidate process is forked, which inherits it (StartPython: fp32).
    SetTorchNumerics(req_.numerics() == "torch");
    result_.mutable_stages()->set_startup_s(
        std::chrono::duration<double>(Clock::now() - ctx_.process_start).count());
    // The candidate process, forked before this process touches CUDA (it gets a context of its
    // own), builds the candidate while the judge loads the task.
    // The init seed is the candidate's to know (it builds ModelNew after it): drawn on its
    // own, it says nothing of the secret seed, which is drawn after the fork, so that the
    // candidate process (a copy of this one) never holds it (docs/security.md).
    init_seed_ = req_.seed() != 0 ? DeriveSeed(req_.seed(), 1000) : SecretSeed(0);
    // Orphans of the candidate's processes come to this process, not the supervisor, so that
    // all of them can be ended before the reference is timed alone (ReferenceAlone).
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    client_ = CandidateClient::Start(&error);
    seed_ = SecretSeed(req_.seed());
    if (client_ && !files_.dir.empty()) {
      // Before the process gets its Load (no candidate code has run in it yet): host code an
      // earlier process of this candidate left in its namespace loads without a write.
      if (std::string host = HostCodeIn(files_.dir); !host.empty()) {
        client_->MarkNativeCode("the candidate's cache namespace holds host code (" + host +
                                "): a library an earlier process left loads without a write");
      }
    }
    if (!client_ || !client_->SendLoad(LoadFor(dialect), &error)) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR, error, "engine_error"};
    }
    try {
      t = Clock::now();
      if (auto v = SetUpDevice()) return v;
      client_->UseDevice(target_.cuda, target_.index);
      result_.mutable_stages()->set_device_context_s(Since(t));
      if (!req_.build_only()) {
        if (auto v = CalibrateCalls()) return v;
      }
      result_.mutable_stages()->set_device_s(Since(t) - result_.stages().gpu_wait_s());
      t = Clock::now();
      if (auto v = LoadTask()) return v;
      result_.mutable_stages()->set_load_task_s(Since(t));
      Enter(Stage::kBuild);
      t = Clock::now();
      auto v = Build();
      result_.mutable_stages()->set_build_s(Since(t));
      if (v) return v;
      if (req_.build_only()) return Verdict{v1::VERDICT_OK, "built (build only)", ""};
      Enter(Stage::kCorrectness);
      t = Clock::now();
      v = Correctness(dialect);
      NoteDeviceMemory();
      result_.mutable_stages()->set_correctness_s(Since(t));
      if (v) return v;
      Enter(Stage::kTiming);
      t = timing_started_ = Clock::now();
      v = Timing(dialect);
      result_.mutable_stages()->set_timing_s(Since(t));
      return v;
    } catch (const py::error_already_set& e) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR, DescribePythonError(e), ""};
    } catch (const std::exception& e) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR, e.what(), ""};
    }
  }

  v1::judge::Load LoadFor(v1::Dialect dialect) const {
    v1::judge::Load l;
    l.set_task_source(req_.task_source());
    l.set_candidate_source(req_.candidate_source());
    l.set_dialect(dialect);
    l.set_device(req_.device().empty() ? "cuda" : req_.device());
    l.set_arch(req_.arch());
    l.set_init_seed(init_seed_);
    l.set_build_only(req_.build_only());
    l.set_nvrtc_dir(files_.nvrtc_dir);
    l.set_torch_extensions_dir(files_.torch_extensions_dir);
    l.set_torch_compile_dir(files_.torch_compile_dir);
    CppBuildConfig cfg = CppConfig();
    l.set_cpp_objects_dir(cfg.objects_dir);
    l.set_cpp_cache_dir(cfg.cache_dir);
    l.set_strict(strict_);
    l.set_calibrate(!req_.build_only());
    return l;
  }

  // The call clock's hop (docs/evaluation.md, "Two clocks"): kCalibrationCalls null calls to
  // the candidate process, timed as the candidate's call-clock samples are (L2 flushed, device
  // drained, the request, the answer after its output copy and synchronisation, the judge's
  // clone of the output slot, a synchronisation), before any task or candidate code has run
  // there, so nothing the candidate does can lengthen them. The fastest is what every call
  // pays at least; it is subtracted from each candidate call-clock sample.
  std::optional<Verdict> CalibrateCalls() {
    std::string error;
    constexpr int kGroup = -2;  // no inputs
    auto waited = Clock::now();
    const bool ready = client_->AwaitCalibration(&error);
    result_.mutable_stages()->set_calibration_wait_s(Since(waited));
    if (ready && reporter_.has_gpu_turns()) {
      // Both CUDA contexts are made and nothing measured or of the task or candidate has run:
      // from here the GPU is this evaluation's alone (supervisor.h, "GPU turns").
      auto asked = Clock::now();
      if (!reporter_.AwaitGpuTurn(&error)) {
        return Verdict{v1::VERDICT_RUNTIME_ERROR, error, "engine_error"};
      }
      result_.mutable_stages()->set_gpu_wait_s(Since(asked));
      Enter(Stage::kLoad);
    }
    auto calls_started = Clock::now();
    if (!ready || !client_->Prepare(kGroup, py::list(), &error)) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR, error + " (calibrating the call clock)",
                     "engine_error"};
    }
    const std::vector<at::Tensor> like = {
        at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(target_.device()))};
    v1::judge::Called called;
    uint32_t calls = 0;
    IterationHooks hooks;
    hooks.before = [&](uint32_t) {
      if (!client_->PoisonOutputs(like, &error)) throw std::runtime_error(error);
      return 0;
    };
    Program null_call = [&](int) {
      if (!client_->Call(calls++, kGroup, {}, true, 0, 0, &called, &error, true) ||
          !called.error().empty() || !called.mismatch().empty()) {
        throw std::runtime_error(error.empty() ? called.error() + called.mismatch() : error);
      }
      for (const at::Tensor& o : client_->outputs()) o.clone();
    };
    TimingOptions o;
    o.cuda = target_.cuda;
    o.device = target_.index;
    o.l2_bytes = result_.system().l2_cache_bytes();
    o.clock = TimingClock::kJudge;
    o.min_samples = o.max_samples = kCalibrationCalls;
    o.max_rel_stderr = 0;  // all of them
    o.time_cap_s = 5;
    try {
      TimingOutcome out = TimeInterleaved(null_call, {}, o, hooks);
      call_overhead_ms_ = out.reference.min_ms();
      result_.set_call_overhead_ms(call_overhead_ms_);
      result_.set_call_overhead_median_ms(out.reference.median_ms());
    } catch (const std::exception& e) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR,
                     std::string("calibrating the call clock: ") + e.what(), "engine_error"};
    }
    if (!client_->EndCalibration(&error)) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR, error + " (calibrating the call clock)",
                     "engine_error"};
    }
    result_.mutable_stages()->set_calibration_calls_s(Since(calls_started));
    return std::nullopt;
  }

  std::optional<Verdict> SetUpDevice() {
    const std::string& d = req_.device().empty() ? std::string("cuda") : req_.device();
    if (!(req_.timing_preroll_ms() >= 0 && req_.timing_preroll_ms() <= kMaxPrerollMs)) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR,
                     "timing_preroll_ms must be between 0 and " + FormatMs(kMaxPrerollMs) +
                         " ms, not " + FormatMs(req_.timing_preroll_ms()),
                     "bad_request"};
    }
    const std::string& speedup_clock = req_.speedup_clock();
    if (!speedup_clock.empty() && speedup_clock != "call" && speedup_clock != "device") {
      return Verdict{v1::VERDICT_RUNTIME_ERROR,
                     "speedup_clock must be \"call\" or \"device\", not \"" + speedup_clock + "\"",
                     "bad_request"};
    }
    const std::string& clock = req_.timing_clock();
    if (!clock.empty() && clock != "activity" && clock != "events") {
      return Verdict{v1::VERDICT_RUNTIME_ERROR,
                     "timing_clock must be \"activity\" or \"events\", not \"" + clock + "\"",
                     "bad_request"};
    }

    if (d == "cpu") {
      target_.cuda = false;
    } else if (d.rfind("cuda", 0) == 0) {
      target_.cuda = true;
      target_.index = d.size() > 5 ? std::atoi(d.c_str() + 5) : 0;
      int count = 0;
      if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
        cudaGetLastError();
        return Verdict{v1::VERDICT_RUNTIME_ERROR,
                       std::string("no CUDA device is available (") +
                           (e != cudaSuccess ? cudaGetErrorName(e) : "none found") +
                           "; use --device cpu on machines without a GPU)",
                       "gpu_unavailable"};
      }
      if (target_.index >= count) {
        return Verdict{v1::VERDICT_RUNTIME_ERROR,
                       "device " + d + " does not exist (" + std::to_string(count) + " GPUs)",
                       "no_gpu"};
      }
      cudaSetDevice(target_.index);
      py::module_::import("torch").attr("cuda").attr("set_device")(target_.index);
    } else {
      return Verdict{v1::VERDICT_RUNTIME_ERROR, "unknown device '" + d + "'", "bad_request"};
    }
    result_.set_device(target_.name());
    *result_.mutable_system() = CollectSystemInfo(target_.cuda ? target_.index : -1);
    result_.mutable_system()->set_cache_isolated(files_.isolated);
    std::string arch = req_.arch();
    if (arch.empty() && target_.cuda) {
      cudaDeviceProp p;
      cudaGetDeviceProperties(&p, target_.index);
      arch = "sm_" + std::to_string(p.major) + std::to_string(p.minor);
    }
    if (arch.empty()) arch = "sm_90";
    arch_ = arch;
    py::module_ torch = py::module_::import("torch");
    result_.mutable_system()->set_torch_version(py::str(torch.attr("__version__")));
    return std::nullopt;
  }

  std::optional<Verdict> LoadTask() {
    try {
      task_ = ExecModule("kforge_task", req_.task_source());
      for (const char* name : {"Model", "get_inputs", "get_init_inputs"}) {
        if (!py::hasattr(task_, name)) {
          return Verdict{v1::VERDICT_RUNTIME_ERROR,
                         std::string("the task defines no ") + name, "task_error"};
        }
      }
      if (req_.build_only()) return std::nullopt;  // the reference is not needed to build
      // Built on the CPU right after the init seed, as the candidate process builds its copy
      // and ModelNew (KernelBench's weight semantics), then moved to the device.
      SeedAll(init_seed_);
      py::list init_inputs = ToDevice(task_.attr("get_init_inputs")(), Target{});
      SeedAll(init_seed_);
      ref_model_ = task_.attr("Model")(*init_inputs).attr("to")(target_.name());
      fresh_timing_inputs_ = QuickInputs();
    } catch (const py::error_already_set& e) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR, "the task failed to load: " + DescribePythonError(e),
                     "task_error"};
    }
    return std::nullopt;
  }

  // The candidate process's build: its verdict is final only when it is not `ok`.
  std::optional<Verdict> Build() {
    v1::judge::Loaded loaded;
    std::string error;
    if (!client_->Loaded(&loaded, &error)) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR, error + " while building the candidate", ""};
    }
    result_.set_compiler_log(PrintableUtf8(loaded.compiler_log()));
    v1::StageDurations* st = result_.mutable_stages();
    st->set_build_host_compile_s(loaded.build_host_compile_s());
    st->set_build_kernel_compile_s(loaded.build_kernel_compile_s());
    st->set_build_load_s(loaded.build_load_s());
    if (loaded.verdict() == v1::VERDICT_OK) return std::nullopt;
    if (loaded.verdict() == v1::VERDICT_UNSPECIFIED) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR, "the candidate process answered Load without a verdict", ""};
    }
    return Verdict{loaded.verdict(), loaded.reason(), loaded.rule()};
  }

  // Where the candidate process puts cpp builds (its cache namespace).
  CppBuildConfig CppConfig() const {
    CppBuildConfig cfg;
    cfg.cache_dir = ctx_.cache_dir.empty() ? "" : ctx_.cache_dir + "/cpp";
    cfg.objects_dir = files_.cpp_objects_dir;
    cfg.nvrtc_cache_dir = files_.nvrtc_dir;
    return cfg;
  }

  void Synchronize() {
    if (!target_.cuda) return;
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      throw std::runtime_error(std::string("CUDA error in the judge: ") + cudaGetErrorString(e));
    }
  }

  // The tolerance for outputs like the reference's `ref`, as the correctness report states it.
  Tolerance TaskTolerance(const Outputs& ref) {
    Tolerance tol = DefaultTolerance(
        ref.tensors.empty() ? at::kFloat : ref.tensors[0].scalar_type(), req_.atol(), req_.rtol());
    auto* report = result_.mutable_correctness();
    report->set_atol(tol.atol);
    report->set_rtol(tol.rtol);
    return tol;
  }

  // The worst errors over every comparison (trials and timed iterations).
  void RecordErrors(const Comparison& cmp) {
    auto* report = result_.mutable_correctness();
    report->set_max_abs_error(std::max(report->max_abs_error(), cmp.max_abs_error));
    report->set_max_rel_error(std::max(report->max_rel_error(), cmp.max_rel_error));
    report->set_whole_rel_error(std::max(report->whole_rel_error(), cmp.whole_rel_error));
  }

  // What the candidate process said about a call, as a verdict when the call failed: it raised
  // or crashed (runtime_error), answered something the reference's outputs do not match in
  // count, type or shape (incorrect), or found a runtime rule on its own tensors (rejected).
  std::optional<Verdict> CallVerdict(const v1::judge::Called& c, v1::Dialect dialect,
                                     const std::string& where) {
    if (!c.error().empty()) {
      if (c.no_gpu()) {
        return Verdict{v1::VERDICT_RUNTIME_ERROR,
                       "not run: the candidate's kernels compiled for " +
                           std::string(req_.arch().empty() ? "sm_90" : req_.arch()) +
                           " but cannot run without a GPU (CPU mode); correctness and timing "
                           "were not checked",
                       "no_gpu"};
      }
      return Verdict{v1::VERDICT_RUNTIME_ERROR, "the candidate raised: " + where + c.error(), ""};
    }
    if (!c.rule().empty()) return Verdict{v1::VERDICT_REJECTED, c.rule_reason(), c.rule()};
    if (!c.mismatch().empty()) {
      return Verdict{v1::VERDICT_INCORRECT, "the candidate " + where + c.mismatch(), ""};
    }
    bool must_launch = dialect == v1::DIALECT_NVRTC || (dialect == v1::DIALECT_CPP && target_.cuda &&
                                                        HasCppKernels());
    if (must_launch && c.own_launches() == 0) {
      return Verdict{v1::VERDICT_REJECTED,
                     "fallback: " + where + "the candidate's forward launched none of its own kernels",
                     "fallback"};
    }
    if (c.kernels_checked() && !c.own_kernel()) {
      return UnlaunchedKernels(DefinedKernels(),
                               {c.launched_kernels().begin(), c.launched_kernels().end()}, where);
    }
    return std::nullopt;
  }

  // The kernels the candidate's source defines (own_kernels.h), read once.
  const std::vector<std::string>& DefinedKernels() {
    if (!defined_kernels_) defined_kernels_ = DefinedKernelNames(req_.candidate_source());
    return *defined_kernels_;
  }

  // Whether correctness trials are activity-traced: a kernelbench candidate on a GPU whose
  // source defines kernels.
  bool TracesTrials(v1::Dialect dialect) {
    return target_.cuda && dialect == v1::DIALECT_KERNELBENCH && !DefinedKernels().empty();
  }

  bool HasCppKernels() const {
    return req_.candidate_source().find("KFORGE_KERNELS") != std::string::npos;
  }

  // One correctness trial with inputs from `seed`, adding its time to `times`.
  // `rule_on_mismatch` names the rule when a mismatch means a hack rather than a wrong kernel
  // (after timing: output caching).
  std::optional<Verdict> Trial(uint64_t seed, v1::Dialect dialect, const char* rule_on_mismatch,
                               TrialTimes& times) {
    Clock::time_point lap = Clock::now();
    auto count = [&](double TrialTimes::*part) {
      times.*part += Since(lap);
      lap = Clock::now();
    };
    std::string error;
    ref_out_like_.clear();  // the last trial's, freed before this trial's reference runs
    ref_aliases_.clear();
    SeedAll(seed);
    py::list inputs = ToDevice(CallOnDevice(task_.attr("get_inputs"), target_), target_);
    // The candidate's copy, in the slots it can see, made before the reference runs.
    if (!client_->Prepare(0, inputs, &error)) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR, error, "engine_error"};
    }
    Synchronize();
    count(&TrialTimes::inputs);
    py::object ref_out;
    {
      // Where the candidate process traces this trial's call (below), the reference's call is
      // traced here too, and its records dropped: CUPTI leaves a cost on every launch of a
      // process it has traced in, after it is off (session 20), and the call clock's samples,
      // which come next, then pay it on both sides rather than on the candidate's alone.
      std::unique_ptr<ActivityTrace> alike;
      if (TracesTrials(dialect)) {
        std::string why_not;
        alike = ActivityTrace::Start(&why_not);
      }
      at::NoGradGuard no_grad;
      ref_out = ref_model_(*inputs);
      Synchronize();
    }
    count(&TrialTimes::reference);
    Outputs ref = OutputsToTensors(ref_out);
    if (!ref.error.empty()) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR, "the reference " + ref.error, "task_error"};
    }
    std::vector<at::Tensor> in_tensors = TensorsOf(inputs);
    // The timing's output slots are laid out like this (TimePhase), so that the timing needs no
    // reference call of its own.
    ref_out_like_ = ref.tensors;
    ref_aliases_ = AliasBits(ref.tensors, in_tensors);
    if (!client_->PoisonOutputs(ref.tensors, &error)) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR, error, "engine_error"};
    }
    count(&TrialTimes::poison);
    v1::judge::Called called;
    // Traced, so that the candidate process can tell whether the call launched a kernel the
    // candidate defines (the own-kernels rule, own_kernels.h): here, untimed, whether or not
    // the process reached native code, which stops the device clock's timed samples.
    const double traced = TracesTrials(dialect) ? kTracedTrialPrerollMs : 0;
    if (!client_->Call(trial_calls_++, 0, ref_aliases_, false, 0, traced, &called, &error)) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR, error, ""};
    }
    count(&TrialTimes::candidate);
    // An output that is one of its inputs: a changed input is the finding that explains it.
    if (called.rule() == "returns_input") {
      if (auto v = ChangedInput(in_tensors, client_->inputs(0), "")) return v;
    }
    if (auto v = CallVerdict(called, dialect, "")) return v;
    // The judge's own copy of what the candidate wrote: nothing the candidate process does
    // later can change it.
    std::vector<at::Tensor> cand;
    for (const at::Tensor& o : client_->outputs()) cand.push_back(o.clone());
    Synchronize();
    for (size_t o = 0; o < cand.size(); ++o) {
      if (auto v = StaleMemory(cand[o], o, "")) return v;
    }
    count(&TrialTimes::outputs);
    if (auto v = ChangedInput(in_tensors, client_->inputs(0), "")) return v;
    count(&TrialTimes::inputs_unchanged);
    Comparison cmp = CompareOutputs(ref.tensors, cand, TaskTolerance(ref));
    count(&TrialTimes::compare);
    RecordErrors(cmp);
    if (!cmp.ok) {
      if (rule_on_mismatch) {
        return Verdict{v1::VERDICT_REJECTED,
                       std::string(rule_on_mismatch) +
                           ": correct during the trials but wrong on fresh inputs after timing (" +
                           cmp.reason + ")",
                       rule_on_mismatch};
      }
      return Verdict{v1::VERDICT_INCORRECT, cmp.reason, ""};
    }
    return std::nullopt;
  }

  std::optional<Verdict> Correctness(v1::Dialect dialect) {
    uint32_t trials = req_.correctness_trials() ? req_.correctness_trials() : kDefaultTrials;
    auto* report = result_.mutable_correctness();
    TrialTimes times;
    std::optional<Verdict> v;
    v1::StageDurations* st = result_.mutable_stages();
    for (uint32_t t = 0; t < trials && !v; ++t) {
      report->set_trials(t + 1);
      v = Trial(DeriveSeed(seed_, t), dialect, nullptr, times);
      if (!v) report->set_trials_passed(t + 1);
      if (t == 0) {
        st->set_correctness_first_reference_s(times.reference);
        st->set_correctness_first_candidate_s(times.candidate);
      }
    }
    st->set_correctness_inputs_s(times.inputs);
    st->set_correctness_reference_s(times.reference);
    st->set_correctness_poison_s(times.poison);
    st->set_correctness_candidate_s(times.candidate);
    st->set_correctness_outputs_s(times.outputs);
    st->set_correctness_inputs_unchanged_s(times.inputs_unchanged);
    st->set_correctness_compare_s(times.compare);
    return v;
  }

  // One timing iteration's inputs: the reference's, and the candidate's copy in the slots of
  // input group `group`.
  struct TimedInputs {
    py::list ref;
    int group = 0;
  };

  // `candidate`: with the candidate process's copies (in its slot group `group`).
  TimedInputs MakeTimedInputs(uint64_t seed, int group, bool candidate = true) {
    SeedAll(seed);
    TimedInputs in;
    in.ref = ToDevice(CallOnDevice(task_.attr("get_inputs"), target_), target_);
    in.group = group;
    std::string error;
    if (candidate && !client_->Prepare(group, in.ref, &error)) throw std::runtime_error(error);
    return in;
  }

  // After a timed iteration, as in the trials: both programs' inputs unchanged, the
  // candidate's outputs (the judge's copy of its output slots) free of poison and within
  // tolerance of the reference's on the same inputs. A candidate that behaves only while
  // untimed (work skipped once the calls come fast, a result replayed for inputs seen before) is
  // caught here. Wrong values are `incorrect`, rule timed_outputs: a kernel that is right only
  // most of the time fails here without being a hack.
  // `phase` names the clock's phase (the device clock's puts every launch of a forward behind
  // its pre-roll, so a race between the candidate's streams that the host's launch gaps hide
  // elsewhere shows there: 1_72).
  std::optional<Verdict> CheckTimedOutputs(uint32_t iteration, const std::string& phase,
                                           const TimedInputs& in, const py::object& ref_out,
                                           const std::vector<at::Tensor>& cand) {
    const std::string where =
        "in iteration " + std::to_string(iteration) + " of the timing stage (" + phase + "), ";
    Outputs ref = OutputsToTensors(ref_out);
    if (!ref.error.empty()) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR, "the reference " + ref.error, "task_error"};
    }
    if (auto v = ChangedInput(TensorsOf(in.ref), client_->inputs(in.group), where)) return v;
    std::string wrong;
    for (size_t o = 0; o < cand.size(); ++o) {
      if (HoldsPoison(cand[o])) wrong = "output " + std::to_string(o) + " was not written";
    }
    if (wrong.empty()) {
      Comparison cmp = CompareOutputs(ref.tensors, cand, TaskTolerance(ref));
      RecordErrors(cmp);
      if (!cmp.ok) wrong = cmp.reason;
    }
    if (!wrong.empty()) {
      return Verdict{v1::VERDICT_INCORRECT,
                     "timed_outputs: correct during the trials but wrong " + where +
                         "against the reference on the same inputs (" + wrong + ")",
                     "timed_outputs"};
    }
    return std::nullopt;
  }

  // Whether get_inputs() (plus the candidate's copy) is quick enough for fresh inputs in every
  // timing iteration: one try, or two when the first is slow (it may pay for first use),
  // made before the candidate exists (so it cannot slow them down to get rotating sets).
  bool QuickInputs() {
    for (int k = 0; k < 2; ++k) {
      auto made = Clock::now();
      {
        // get_inputs() and a copy like the candidate's (the slots are not declared yet: the
        // candidate process is still building and answers in order).
        SeedAll(DeriveSeed(seed_, 1900 + k));
        py::list probe = ToDevice(CallOnDevice(task_.attr("get_inputs"), target_), target_);
        for (const at::Tensor& t : TensorsOf(probe)) t.clone();
      }
      Synchronize();
      if (Since(made) * 1000 <= kFreshInputsMaxMs) return true;
    }
    return false;
  }

  // Both clocks (docs/evaluation.md, "Two clocks"): the call clock's samples first, then on a
  // GPU the device clock's (skipped where the candidate process has reached native code); each
  // with inputs of its own (different seeds: no call sees inputs an earlier call saw), the
  // outputs of every timed call checked, and the stop rule on that clock. The call clock goes
  // first because CUPTI, once it has traced in a process, may leave a cost on every later
  // launch (session 20, with torch's profiler: 2_39's reference 0.079 -> 0.108 ms on the
  // H200), so the call clock's samples come from processes where it has not run, or where it
  // ran in both (the traced correctness trials of a candidate that defines kernels, Trial).
  // Then fresh inputs once more: outputs cached across calls are caught there. Then the
  // candidate's processes are ended and the reference is timed alone (ReferenceAlone).
  std::optional<Verdict> Timing(v1::Dialect dialect) {
    SampleClocks(target_.cuda ? target_.index : -1, result_.mutable_system());
    TimedPhase call;
    {
      auto t = Clock::now();
      std::optional<Verdict> v = TimePhase(dialect, false, &call);
      result_.mutable_stages()->set_timing_call_s(Since(t));
      if (v) return v;
    }
    std::string native;
    std::optional<TimedPhase> device;
    if (!target_.cuda) {
      result_.set_device_clock_note("no GPU (CPU mode): the call clock only");
    } else if (client_->NativeCode(&native)) {
      result_.set_device_clock_note("not measured: the candidate process reached native code (" +
                                    native + ")");
    } else {
      std::string why_not;
      judge_clock_ = StartJudgeClock(&why_not);
      if (!judge_clock_) {
        result_.set_device_clock_note("not measured: the device clock cannot run here (" +
                                      why_not + ")");
      } else {
        device.emplace();
        auto t = Clock::now();
        std::optional<Verdict> v = TimePhase(dialect, true, &*device);
        result_.mutable_stages()->set_timing_device_s(Since(t));
        result_.mutable_stages()->set_timing_trace_s(judge_clock_->trace_s());
        if (v) return v;
        judge_clock_.reset();
      }
    }
    if (device && !device->note.empty()) {
      result_.set_device_clock_note(device->note);
      device.reset();
    }
    if (device && client_->NativeCode(&native)) {
      result_.set_device_clock_note(
          "not used: the candidate process reached native code while it was timed (" + native +
          "); its spans are claims");
      device.reset();
    }
    TrialTimes post_timing;
    if (auto v = Trial(DeriveSeed(seed_, 900), dialect, "output_cache", post_timing)) return v;
    if (auto v = ReferenceAlone(dialect, &call, device ? &*device : nullptr)) return v;
    *result_.mutable_reference_call() = call.out.reference;
    *result_.mutable_candidate_call() = call.out.candidate;
    result_.set_timing_preroll_ms(0);
    result_.set_timing_clock(TimingClockName(call.out.clock));
    result_.set_timing_clock_note(call.out.clock_note);
    *result_.mutable_candidate_claim() = Summarise(call.claims);
    if (req_.keep_samples()) {
      KeepSamples(call.out.ref, call.out.clock, call.ref_input_sets,
                  result_.mutable_reference_call(), call.out.shared_reference_ms);
      KeepSamples(call.out.cand, call.out.clock, call.input_sets, result_.mutable_candidate_call());
    }
    SpeedupInterval by_call = SpeedupOf(call.out.reference, call.out.candidate,
                                        target_.cuda ? kCallBetween : BetweenProcesses{});
    result_.set_speedup_call(by_call.speedup);
    result_.set_speedup_call_ci_low(by_call.low);
    result_.set_speedup_call_ci_high(by_call.high);
    result_.set_speedup_call_between_sd(by_call.between_sd);
    SpeedupInterval chosen = by_call;
    result_.set_speedup_clock("call");
    *result_.mutable_reference() = result_.reference_call();
    *result_.mutable_candidate() = result_.candidate_call();
    if (device) {
      *result_.mutable_reference_device() = device->out.reference;
      *result_.mutable_candidate_device() = device->out.candidate;
      if (req_.keep_samples()) {
        KeepSamples(device->out.ref, device->out.clock, device->ref_input_sets,
                    result_.mutable_reference_device(), device->out.shared_reference_ms);
        KeepSamples(device->out.cand, device->out.clock, device->input_sets,
                    result_.mutable_candidate_device());
      }
      result_.mutable_reference_device()->set_event_fallbacks(device->out.ref.event_fallbacks);
      // Beside the device clock: the busy times' and the spans' medians, and their ratios.
      auto beside = [](const std::vector<double>& ref, const std::vector<double>& cand, auto set) {
        if (ref.empty() || cand.empty()) return;
        const double r = Summarise(ref).median_ms(), c = Summarise(cand).median_ms();
        const double ratio = c > 0 ? r / c : 0;
        if (std::isfinite(ratio) && ratio > 0) set(r, c, ratio);
      };
      beside(device->ref_busy, device->cand_busy, [&](double r, double c, double ratio) {
        result_.set_reference_device_busy_ms(r);
        result_.set_candidate_device_busy_ms(c);
        result_.set_speedup_device_busy(ratio);
      });
      beside(device->ref_span, device->cand_span, [&](double r, double c, double ratio) {
        result_.set_reference_device_span_ms(r);
        result_.set_candidate_device_span_ms(c);
        result_.set_speedup_device_span(ratio);
      });
      result_.set_timing_preroll_ms(device->preroll_ms);
      SpeedupInterval by_device =
          SpeedupOf(device->out.reference, device->out.candidate, kDeviceBetween);
      result_.set_speedup_device(by_device.speedup);
      result_.set_speedup_device_ci_low(by_device.low);
      result_.set_speedup_device_ci_high(by_device.high);
      result_.set_speedup_device_between_sd(by_device.between_sd);
      if (req_.speedup_clock() == "device") {
        chosen = by_device;
        result_.set_speedup_clock("device");
        *result_.mutable_reference() = result_.reference_device();
        *result_.mutable_candidate() = result_.candidate_device();
      }
    }
    if (device && !device->out.clock_note.empty()) {
      AddNote(result_.mutable_timing_clock_note(), "device clock: " + device->out.clock_note);
    }
    result_.set_speedup_ci_low(chosen.low);
    result_.set_speedup_ci_high(chosen.high);
    return std::nullopt;
  }

  // The reference's device clock (null, saying why, where it cannot run here).
  std::unique_ptr<DeviceClock> StartJudgeClock(std::string* why_not) {
    return DeviceClock::Start(target_.index, result_.system().l2_cache_bytes(), why_not);
  }

  // Each clock's timing budget (on a GPU half of it each), of which the reference alone gets
  // kAloneBudgetShare.
  double ClockBudgetS() const {
    return target_.cuda ? ctx_.timing_budget_s / 2 : ctx_.timing_budget_s;
  }
  double AloneCapS() const { return ClockBudgetS() * kAloneBudgetShare; }

  // SystemInfo.device_memory_used_bytes: the most in use on the device so far.
  void NoteDeviceMemory() {
    if (!target_.cuda) return;
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      cudaGetLastError();  // not sticky: leave no error for the next CUDA call to report
      return;
    }
    const uint64_t used = total_bytes - free_bytes;
    if (used > result_.system().device_memory_used_bytes()) {
      result_.mutable_system()->set_device_memory_used_bytes(used);
    }
  }

  // One clock's timing: its samples, the candidate's claims, how many input sets it used and
  // (device clock) the pre-roll and why its samples cannot be used.
  struct TimedPhase {
    TimingOutcome out;
    std::vector<double> claims;
    int input_sets = 0;
    int ref_input_sets = 0;  // the reference's (its samples may be ReferenceAlone's)
    double preroll_ms = 0;
    std::string note;
    // Device clock: the kept samples' busy times and spans, and how many of the kept samples
    // were timed by their span because the call was not queued whole behind the pre-roll
    // (CallSplit::queued).
    std::vector<double> ref_busy, cand_busy, ref_span, cand_span;
    uint32_t ref_unqueued = 0, cand_unqueued = 0;
  };

  // A run of the reference alone (TimePhase): the pre-roll to start from and the time cap.
  struct AloneRun {
    double preroll_ms = 0;
    double cap_s = 0;
  };

  // One call of the reference on fresh inputs, from its start to the device drained, seconds.
  double ReferenceCallS() {
    TimedInputs in = MakeTimedInputs(DeriveSeed(seed_, 80000), 0, false);
    const auto t = Clock::now();
    {
      at::NoGradGuard g;
      py::object out = ref_model_(*in.ref);
    }
    Synchronize();
    return Since(t);
  }

  // The reference alone (docs/evaluation.md, "The reference alone"). While the judge times the
  // reference, nothing stops the candidate's processes from keeping the machine busy (CPUs
  // burnt, GPU work of their own) and pausing inside their own calls: the reference reads
  // slower and the speedup higher. So once the timing is done, the candidate process is
  // killed and reaped, every process it started is ended (their orphans came to this process,
  // a child subreaper), and the reference is sampled by itself on each clock measured. Where
  // the interval of its median alone lies wholly below that of its median beside the
  // candidate, the alone samples become the reference's on that clock. Processes still alive
  // after kAloneWaitS end the evaluation: no reference time can be trusted beside them. A clock
  // whose reference is too slow for kAloneMinSamples in its share of the budget is not timed
  // alone (said in its note).
  std::optional<Verdict> ReferenceAlone(v1::Dialect dialect, TimedPhase* call, TimedPhase* device) {
    const auto started = Clock::now();
    struct Writer {
      Clock::time_point started;
      v1::StageDurations* st;
      ~Writer() { st->set_timing_alone_s(Since(started)); }
    } writer{started, result_.mutable_stages()};
    std::string native;
    client_->NativeCode(&native);   // a channel closed before the kill is the candidate's doing
    client_->KillWithoutWaiting();  // reaped below with the rest: a child of this process
    if (!KillChildren(kAloneWaitS)) {
      return Verdict{v1::VERDICT_REJECTED,
                     "processes of the candidate were still alive " + FormatMs(kAloneWaitS) +
                         " s after its timing, through repeated SIGKILLs: the reference cannot "
                         "be timed without them",
                     "stray_processes"};
    }
    client_->EndAuditChannel();
    // One call of the reference by itself (nothing of the candidate's can lengthen it): how
    // long the alone samples will take.
    const double call_s = ReferenceCallS();
    for (TimedPhase* phase : {call, device}) {
      if (phase == nullptr) continue;
      const bool on_device = phase == device;
      // A warm-up and kAloneMinSamples samples, each with its pre-roll, and one of slack: in the
      // clock's share, or longer while it fits in half of what is left of the stage.
      const double sample_s = call_s + phase->preroll_ms / 1000 + 0.001;
      const AloneRun run{phase->preroll_ms,
                         std::max(AloneCapS(), (kAloneMinSamples + 2) * sample_s)};
      const double left_s = ctx_.timing_limit_s - Since(timing_started_);
      if (run.cap_s > 0.5 * left_s && run.cap_s <= AloneCapS()) {
        // The reference fits its own share: the time went to the candidate's calls past the
        // phases' caps (a call cannot be cut short), which a candidate can do on purpose to
        // keep the samples beside it (session 29's red team: one call sleeping out the stage).
        return Verdict{v1::VERDICT_TIMEOUT,
                       "the candidate's calls left " + FormatMs(left_s) + " s of the " +
                           FormatMs(ctx_.timing_limit_s) +
                           " s timing stage, too little to time the reference alone (" +
                           FormatMs(call_s * 1000) + " ms a call)",
                       "alone_starved"};
      }
      if (run.cap_s > 0.5 * left_s) {
        AddNote(&phase->out.clock_note,
                "the reference not timed alone (" + FormatMs(call_s * 1000) +
                    " ms a call alone, too slow for what is left of the stage)");
        continue;
      }
      TimedPhase alone;
      if (on_device) {
        std::string why_not;
        judge_clock_ = StartJudgeClock(&why_not);
        if (!judge_clock_) continue;
      }
      if (auto v = TimePhase(dialect, on_device, &alone, &run)) return v;
      judge_clock_.reset();
      const double alone_ms = alone.out.reference.median_ms();
      if (!alone.note.empty() || !(alone_ms > 0)) continue;
      if (on_device) {
        result_.set_reference_alone_device_ms(alone_ms);
      } else {
        result_.set_reference_alone_call_ms(alone_ms);
      }
      const v1::TimingStats& beside = phase->out.reference;
      if (alone.out.reference.n() < kAloneMinSamples ||
          !(alone.out.reference.median_ci_high_ms() < beside.median_ci_low_ms())) {
        continue;
      }
      AddNote(&phase->out.clock_note,
              "the reference alone: " + FormatMs(beside.median_ms()) +
                  " ms beside the candidate (interval " + FormatMs(beside.median_ci_low_ms()) +
                  "-" + FormatMs(beside.median_ci_high_ms()) + " ms), " + FormatMs(alone_ms) +
                  " ms alone after its processes ended (interval " +
                  FormatMs(alone.out.reference.median_ci_low_ms()) + "-" +
                  FormatMs(alone.out.reference.median_ci_high_ms()) + " ms, " +
                  std::to_string(alone.out.reference.n()) +
                  " samples), whose samples are the reference's in place of those beside it");
      phase->out.reference = alone.out.reference;
      phase->out.ref = alone.out.ref;
      phase->out.shared_reference_ms.clear();
      phase->ref_input_sets = alone.ref_input_sets;
      phase->ref_busy = alone.ref_busy;
      phase->ref_span = alone.ref_span;
      phase->ref_unqueued = alone.ref_unqueued;
    }
    return std::nullopt;
  }

  // `alone_run`: the reference by itself, once the candidate's processes are gone
  // (ReferenceAlone): no candidate calls and no checks, its own seeds, no shared samples, one
  // placement, one warm-up, at least kAloneMinSamples within the run's cap, the device clock's
  // pre-roll starting where the phase beside the candidate ended; its time is timing_alone_s.
  std::optional<Verdict> TimePhase(v1::Dialect dialect, bool device, TimedPhase* phase,
                                   const AloneRun* alone_run = nullptr) {
    const bool alone = alone_run != nullptr;
    // Fresh inputs for every iteration, so that no call sees inputs an earlier call saw: an
    // output memoised by input pointer or content cannot be replayed. Where get_inputs() is
    // too slow for that (decided in LoadTask), up to kTimingInputSets sets rotate
    // (docs/evaluation.md, "Timing").
    const bool fresh = fresh_timing_inputs_;
    // Apart from each other and the trials'.
    const uint64_t seeds = alone ? (device ? 70000 : 60000) : (device ? 10000 : 2000);
    // The parts of timing_s this phase adds to (StageDurations.timing_*), written back however
    // the phase ends.
    struct Parts {
      double inputs = 0, reference = 0, candidate = 0, checks = 0;
    };
    struct PartsWriter {
      const Parts& parts;
      v1::StageDurations* st;
      bool off;  // the reference alone: all of it is timing_alone_s
      ~PartsWriter() {
        if (off) return;
        st->set_timing_inputs_s(st->timing_inputs_s() + parts.inputs);
        st->set_timing_reference_s(st->timing_reference_s() + parts.reference);
        st->set_timing_candidate_s(st->timing_candidate_s() + parts.candidate);
        st->set_timing_checks_s(st->timing_checks_s() + parts.checks);
      }
    };
    Parts parts;
    PartsWriter write_parts{parts, result_.mutable_stages(), alone};
    // Adds the wall time since `t` to a part, the device drained first where `sync` (never
    // inside a sample: the programs' own work is drained by the loop).
    auto add = [this](double* part, Clock::time_point t, bool sync = true) {
      if (sync) {
        try {
          Synchronize();
        } catch (const std::runtime_error&) {
          // The loop's own synchronisation reports it; a verdict already reached stands.
        }
      }
      *part += Since(t);
    };
    const auto made = Clock::now();
    std::vector<TimedInputs> sets;
    sets.push_back(MakeTimedInputs(DeriveSeed(seed_, seeds), 0, !alone));
    int64_t set_bytes = 0;
    for (const auto& t : TensorsOf(sets[0].ref)) set_bytes += t.nbytes();
    // Fresh inputs: iteration i's set replaces set i mod `placements`, kept alive until then,
    // so the sets (the judge's, and the candidate's copies in slots of their own group) lie at
    // `placements` addresses in turn (InputPlacements, timing.h).
    const int placements = alone ? 1 : InputPlacements(fresh, device, set_bytes);
    if (!fresh) {
      for (int k = 1; k < kTimingInputSets && set_bytes * (k + 1) <= kMaxTimingSetBytes; ++k) {
        sets.push_back(MakeTimedInputs(DeriveSeed(seed_, seeds + k), k, !alone));
      }
    }
    // The reference's outputs' layout (the output slots are poisoned before each candidate
    // call, outside the timed region) and which inputs they share storage with: those of the
    // last correctness trial's reference call. Never a reference call of its own: the reference
    // and the candidate must see the same forward calls in the same order, or a task whose
    // model keeps state across calls (an RNN's hidden state, a counter) is a step ahead in the
    // reference and every timed output differs (docs/evaluation.md, "Timing").
    const std::vector<at::Tensor> out_like = ref_out_like_;
    const std::vector<uint64_t> aliases = ref_aliases_;
    add(&parts.inputs, made);
    py::object ref_out = py::none();
    std::vector<at::Tensor> ref_copy, cand_copy;
    std::optional<Verdict> timed_verdict;
    v1::judge::Called called;
    uint32_t iterations = 0;
    int current = 0;  // the iteration's set
    // Device clock: the pre-roll grows until both programs' launches all queue under it (the
    // host launching after it ended puts launch gaps into the span); such late samples are
    // left out while it can still grow. EvalRequest.timing_preroll_ms, when set, is where it
    // starts.
    PrerollGovernor preroll(alone && alone_run->preroll_ms > 0 ? alone_run->preroll_ms
                            : req_.timing_preroll_ms() > 0     ? req_.timing_preroll_ms()
                                                               : kDevicePrerollMs,
                            kMaxDevicePrerollMs, kLateHostToleranceMs);
    static const bool shrink = EnvSwitchOn("KFORGE_PREROLL_SHRINK");  // device_preroll.h
    if (shrink) preroll.EnableShrink();
    double late = 0;
    double reported = std::nan("");
    std::string unusable;  // the device clock's last unusable sample, and why
    uint32_t unusable_count = 0;
    // Calls that recorded GPU work, or none at all (the no_work rule), warm-ups included.
    uint32_t ref_busy_calls = 0, cand_busy_calls = 0, cand_idle_calls = 0;
    // Forward calls each program made in this phase, and the set of its last: a phase cut off
    // between the two programs' calls of an iteration levels them (below) before the next.
    uint32_t ref_calls = 0, cand_calls = 0;
    int ref_last_set = 0, cand_last_set = 0;
    TimingOptions o;
    IterationHooks hooks;
    hooks.before = [&](uint32_t it) {
      auto t = Clock::now();
      iterations = it + 1;
      if (!fresh) {
        current = static_cast<int>(it % sets.size());
      } else {
        current = static_cast<int>(it % placements);
        if (it > 0) {
          if (static_cast<size_t>(current) < sets.size()) {
            sets[current].ref = py::list();  // freed before the next set is made
            sets[current] = MakeTimedInputs(DeriveSeed(seed_, seeds + it), current, !alone);
          } else {
            sets.push_back(MakeTimedInputs(DeriveSeed(seed_, seeds + it), current, !alone));
          }
        }
      }
      std::string error;
      if (!alone && !client_->PoisonOutputs(out_like, &error)) throw std::runtime_error(error);
      late = 0;
      add(&parts.inputs, t);
      return current;
    };
    hooks.after = [&](uint32_t it) {
      auto t = Clock::now();
      if (!alone) {  // the reference alone: nothing of the candidate's to check
        if (!timed_verdict) {
          timed_verdict =
              ChangedInput(TensorsOf(sets[current].ref), client_->inputs(sets[current].group),
                           "in iteration " + std::to_string(it) + " of the timing stage, ");
        }
        if (!timed_verdict) timed_verdict = CallVerdict(called, dialect, "in a timed call, ");
        if (!timed_verdict) {
          const std::string phase = device ? "the device clock's, behind a " +
                                                 FormatMs(preroll.preroll_ms()) + " ms pre-roll"
                                           : "the call clock's";
          timed_verdict = CheckTimedOutputs(it, phase, sets[current], ref_out, cand_copy);
        }
      }
      if (!device && called.has_claim()) {
        phase->claims.push_back(target_.cuda ? called.claim().event_ms() : called.claim().host_ms());
      }
      if (device) preroll.AfterIteration(late, it >= static_cast<uint32_t>(o.warmup));
      ref_out = py::none();  // freed outside the timed region
      ref_copy.clear();
      cand_copy.clear();
      add(&parts.checks, t);
      return !timed_verdict;
    };
    // The iteration under way is a sampled one (not a warm-up).
    auto sampled = [&] { return iterations > static_cast<uint32_t>(o.warmup); };
    // The reference's forward on set `s`, counted: every call of it in this phase (timed,
    // shared untimed, levelling) goes through here.
    auto ref_forward = [&](int s) {
      at::NoGradGuard g;
      ref_out = ref_model_(*sets[s].ref);
      ++ref_calls;
      ref_last_set = s;
    };
    Program ref, cand;
    if (device) {
      // A sample's device time (docs/evaluation.md, "Two clocks"): its span less the short
      // idle gaps between its activities (CallSplit::work_ms) where the call was queued whole
      // behind the pre-roll, else its span. The reference's measured here; the candidate's,
      // measured in its process, used only when its span is no longer than the judge saw the
      // whole call take.
      auto device_time = [&](double span, double busy, double work, bool queued,
                             std::vector<double>* spans, std::vector<double>* busies,
                             uint32_t* unqueued) {
        const bool by_work = queued && std::isfinite(work) && work > 0;
        if (sampled()) {
          spans->push_back(span);
          if (std::isfinite(busy) && busy > 0) busies->push_back(std::min(busy, span));
          if (!by_work) ++*unqueued;
        }
        return by_work ? std::min(work, span) : span;
      };
      ref = [&](int s) {
        DeviceClock::Reading r =
            judge_clock_->Sample([&] { ref_forward(s); }, preroll.preroll_ms());
        if (CallProfileOn()) ref_profile_.AddReferenceDevice(r.steps_us);
        preroll.NoteLaunch(r.launch_ms, /*reference=*/true);
        late = std::max(late, r.late_host_ms);
        if (r.ok) ++ref_busy_calls;
        reported = std::nan("");
        if (r.ok && preroll.Keep(r.late_host_ms)) {
          reported = device_time(r.span_ms, r.busy_ms, r.work_ms, r.queued, &phase->ref_span,
                                 &phase->ref_busy, &phase->ref_unqueued);
        }
      };
      cand = [&](int s) {
        called.Clear();
        const uint32_t keep = fresh ? 0 : static_cast<uint32_t>(sets.size());
        std::string error;
        auto t0 = Clock::now();
        if (!client_->Call(timed_calls_++, sets[s].group, aliases, true, keep,
                           preroll.preroll_ms(), &called, &error)) {
          timed_verdict = Verdict{v1::VERDICT_RUNTIME_ERROR, error + " (timing stage)", ""};
          reported = std::nan("");
          return;
        }
        const double observed = Since(t0) * 1000;
        ++cand_calls;
        cand_last_set = s;
        const v1::judge::Claim& c = called.claim();
        preroll.NoteLaunch(c.launch_ms(), /*reference=*/false);
        late = std::max(late, c.late_host_ms());
        reported = std::nan("");
        if (c.found()) {
          ++cand_busy_calls;
        } else if (c.no_span() == kNoGpuActivity) {
          ++cand_idle_calls;
          std::string native;
          if (!timed_verdict && !client_->NativeCode(&native)) {
            timed_verdict =
                NoWork(cand_idle_calls, cand_busy_calls, ref_busy_calls, "in the timing stage, ");
          }
        }
        if (!c.found()) {
          unusable = c.no_span().empty() ? "no span" : c.no_span();
          ++unusable_count;
        } else if (!(c.span_ms() > 0) || c.span_ms() > observed) {
          unusable = "a span of " + FormatMs(c.span_ms()) + " ms where the judge saw the call take " +
                     FormatMs(observed) + " ms";
          ++unusable_count;
        } else if (preroll.Keep(c.late_host_ms())) {
          // A claim: its busy time kept only when positive and finite, and never above the span.
          reported = device_time(c.span_ms(), c.busy_ms(), c.work_ms(), c.queued(),
                                 &phase->cand_span, &phase->cand_busy, &phase->cand_unqueued);
        }
        for (const at::Tensor& o : client_->outputs()) cand_copy.push_back(o.clone());
      };
      o.clock = TimingClock::kReported;
      o.reported = [&] { return reported; };
      o.settled = [&] { return preroll.HostBound(); };
    } else {
      // The judge's clock sees each program's call as a caller does: the reference's forward
      // in this process, the candidate's request to its process, its answer and the judge's
      // copy of the output slots, each followed by a device synchronisation. The candidate's
      // outputs are copied twice (into the slots by its process, out of them by the judge),
      // so the reference's are too (into buffers laid out like the slots, then out of them).
      std::vector<at::Tensor> ref_slots;
      for (const at::Tensor& t : out_like) ref_slots.push_back(at::empty_like(t));
      ref = [&, ref_slots](int s) {
        const auto start = Clock::now();
        ref_forward(s);
        const double forward_us = Since(start) * 1e6;
        std::vector<at::Tensor> outs = OutputsToTensors(ref_out).tensors;
        for (size_t k = 0; k < outs.size() && k < ref_slots.size(); ++k) {
          ref_slots[k].copy_(outs[k]);
          ref_copy.push_back(ref_slots[k].clone());
        }
        if (CallProfileOn()) ref_profile_.AddReference(forward_us, Since(start) * 1e6);
      };
      cand = [&](int s) {
        std::string error;
        called.Clear();
        const uint32_t keep = fresh ? 0 : static_cast<uint32_t>(sets.size());
        if (!client_->Call(timed_calls_++, sets[s].group, aliases, true, keep, 0, &called,
                           &error)) {
          timed_verdict = Verdict{v1::VERDICT_RUNTIME_ERROR, error + " (timing stage)", ""};
          return;
        }
        for (const at::Tensor& o : client_->outputs()) cand_copy.push_back(o.clone());
      };
      o.clock = TimingClock::kJudge;
    }
    // Each program's calls, as parts of timing_s. Device clock: the host's time in the call
    // (its span is read inside it), without a synchronisation of its own; GPU work still
    // running at the return is drained by the loop and counted in the rest. Call clock (and
    // the host clock): a sample is the call itself, so nothing is wrapped around it; the
    // samples' sum is counted after the loop (warm-ups left out).
    Program timed_ref = !device ? ref : Program([&, ref](int s) {
      auto t = Clock::now();
      ref(s);
      add(&parts.reference, t, false);
    });
    Program timed_cand = cand;
    if (alone) {
      timed_cand = Program();  // TimeInterleaved: the reference by itself
    } else if (device) {
      timed_cand = [&, cand](int s) {
        auto t = Clock::now();
        cand(s);
        add(&parts.candidate, t, false);
      };
    }
    o.cuda = target_.cuda;
    o.device = target_.index;
    o.l2_bytes = result_.system().l2_cache_bytes();
    if (alone) {
      o.min_samples = std::max(kAloneMinSamples, req_.min_samples());
    } else if (req_.min_samples()) {
      o.min_samples = req_.min_samples();
    } else if (device && placements > 1) {
      // Every placement of a short program sampled several times before the stop rule may end
      // the sampling: with 20 samples over 8 placements (2-3 each) the median still moved 3-7%
      // between processes for programs of 2-5 us (session 23, call 4); programs of 50 us and
      // more moved little with their placement (call 3).
      o.short_min_samples = kSamplesPerPlacement * placements;
      o.short_below_ms = kPlacementShortMs;
    }
    // Each placement's first call, the first to touch its memory, is a warm-up. The reference
    // alone is warm already: one.
    o.warmup = alone ? 1 : std::max(o.warmup, placements);
    // The call clock's samples carry the host's and the signalling's noise: its stop rule asks
    // for a 1% standard error (a speedup interval of about +-3%), the device clock's for 0.5%.
    o.max_rel_stderr = req_.max_rel_stderr() > 0 ? req_.max_rel_stderr()
                       : device                  ? kDeviceMaxRelStderr
                                                 : kCallMaxRelStderr;
    // A request's own max_rel_stderr is honoured as asked, with no between-process allowance.
    if (target_.cuda && !(req_.max_rel_stderr() > 0))
      o.between = device ? kDeviceBetween : kCallBetween;
    // A request that names its own precision gets it, however slow the candidate.
    if (!alone && !req_.min_samples() && !(req_.max_rel_stderr() > 0)) {
      o.slow_below = kSlowBelow;
      o.slow_min_samples = kSlowMinSamples;
      // The call clock subtracts at most the calibrated hop from the candidate's samples.
      if (!device) o.slow_offset_ms = call_overhead_ms_;
    }
    // Each clock has half of the timing budget on a GPU, less the reference alone's share.
    o.time_cap_s = alone ? alone_run->cap_s : ClockBudgetS() * (1 - kAloneBudgetShare);
    // A shared reference (reference_share.h): timed in a secret one of kShareEvery sampled
    // iterations, its outputs computed (untimed) in every other one, so every iteration's
    // outputs are still checked.
    const auto& shared =
        device ? req_.shared_reference_device_ms() : req_.shared_reference_call_ms();
    if (!alone && static_cast<size_t>(shared.size()) >= ReferenceShares::kMinSamples) {
      o.shared_reference_ms.assign(shared.begin(), shared.end());
      const uint64_t salt = device ? 40000 : 30000;
      o.reference_timed = [this, salt](uint32_t i) {
        return DeriveSeed(seed_, salt + i) % kShareEvery == 0;
      };
      o.reference_untimed = ref_forward;
    }
    try {
      phase->out = TimeInterleaved(timed_ref, timed_cand, o, hooks);
    } catch (const std::runtime_error& e) {
      if (!device || timed_verdict) throw;
      phase->note = std::string("not used: ") + e.what();  // too few of the reference's spans
      if (alone) return std::nullopt;
      // Cut off inside an iteration (a pre-roll that could not hold the GPU, say) after one
      // program's call and before the other's: the one behind makes its call on the same
      // inputs, untimed, so that a model that keeps state across calls stays in step.
      if (ref_calls < cand_calls) {
        try {
          ref_forward(cand_last_set);
          ref_out = py::none();
        } catch (const std::exception& e) {
          return Verdict{v1::VERDICT_RUNTIME_ERROR,
                         std::string("the reference's call after the device phase: ") + e.what(),
                         "engine_error"};
        }
      } else if (cand_calls < ref_calls) {
        std::string error;
        if (!client_->Call(timed_calls_++, sets[ref_last_set].group, aliases, true,
                           fresh ? 0 : static_cast<uint32_t>(sets.size()), 0, &called, &error)) {
          return Verdict{v1::VERDICT_RUNTIME_ERROR, error + " (timing stage)", ""};
        }
        if (auto v = CallVerdict(called, dialect, "in the call after the device phase, ")) return v;
      }
    }
    NoteDeviceMemory();  // the timing's inputs and outputs still held
    phase->out.reference.set_shared_samples(phase->out.shared_reference_used);
    std::string share_note = phase->out.shared_reference_note;
    if (phase->out.shared_reference_used > 0) {
      share_note = "the reference's " + std::to_string(phase->out.shared_reference_used) +
                   " samples shared from an evaluation " +
                   FormatMs(std::round(req_.shared_reference_age_s())) +
                   " s earlier on this slot, with " + std::to_string(phase->out.ref.ms.size()) +
                   " new ones";
    }
    if (!share_note.empty()) {
      AddNote(&phase->out.clock_note, share_note);
    }
    if (phase->out.slow) {
      AddNote(&phase->out.clock_note,
              "slow: every reference sample was shorter than " + FormatMs(kSlowBelow) +
                  " of every candidate sample after " + std::to_string(phase->out.cand.ms.size()) +
                  " pairs; sampling stopped there, not converged (the speedup is below " +
                  FormatMs(kSlowBelow) + " whatever more samples would say)");
    }
    if (!device) {
      for (double ms : phase->out.ref.ms) parts.reference += ms / 1000;
      for (double ms : phase->out.cand.ms) parts.candidate += ms / 1000;
    }
    if (timed_verdict) return timed_verdict;
    if (!alone && !device && call_overhead_ms_ > 0) {
      // What every call to the candidate process pays at least, measured before its code ran
      // (and no more than its fastest call left beside its own time: CallHopMs).
      const double hop = CallHopMs(call_overhead_ms_, phase->out.cand.ms, phase->claims);
      if (hop < call_overhead_ms_) {
        AddNote(&phase->out.clock_note,
                "call clock: " + FormatMs(hop) +
                    " ms subtracted for the hop, not the calibration's " +
                    FormatMs(call_overhead_ms_) +
                    " ms (more than the candidate's fastest call left beside its own time)");
      }
      for (double& ms : phase->out.cand.ms) ms = std::max(ms - hop, kMinCallMs);
      const v1::TimingStats raw = phase->out.candidate;
      phase->out.candidate = Summarise(phase->out.cand.ms);
      phase->out.candidate.set_event_fallbacks(raw.event_fallbacks());
      phase->out.candidate.set_capped(raw.capped());
      phase->out.candidate.set_settled(raw.settled());
    }
    phase->input_sets = fresh ? static_cast<int>(iterations) : static_cast<int>(sets.size());
    phase->ref_input_sets = phase->input_sets;
    phase->preroll_ms = device ? preroll.preroll_ms() : 0;
    if (device && !alone && phase->note.empty()) {
      const size_t n = phase->out.cand.ms.size();
      if (n < 3 || unusable_count > n) {
        phase->note = "not used: " + std::to_string(unusable_count) +
                      " of the candidate's device samples could not be used (last: " + unusable +
                      ")";
      } else {
        std::string& note = phase->out.clock_note;
        if (phase->ref_unqueued + phase->cand_unqueued > 0) {
          AddNote(
              &note,
              std::to_string(phase->ref_unqueued) + " of the " + "reference's and " +
                  std::to_string(phase->cand_unqueued) +
                  " of the candidate's samples timed by their span (not queued whole behind the "
                  "pre-roll: launched late, work beside the pre-roll, or an unlaunched activity)");
        }
        if (preroll.dropped() > 0) {
          // With shrinking, the length at the end is the shrink note's.
          AddNote(&note,
                  std::to_string(preroll.dropped()) +
                      " late samples left out (the host still launched after the pre-roll "
                      "ended; the pre-roll grew after each" +
                      (preroll.shrinks() > 0 ? ")"
                                             : ", to " + FormatMs(preroll.preroll_ms()) + " ms)"));
        }
        if (preroll.shrinks() > 0) {
          AddNote(&note, "the pre-roll shrank " + std::to_string(preroll.shrinks()) +
                             " times to 1.5 times the longest launch of " +
                             std::to_string(PrerollGovernor::kShrinkWindow) +
                             " iterations on time (KFORGE_PREROLL_SHRINK), ending at " +
                             FormatMs(preroll.preroll_ms()) + " ms");
        }
        if (phase->out.settled) {
          AddNote(&note,
                  std::string("host-bound: the host still launched ") + "after the " +
                      FormatMs(preroll.preroll_ms()) + " ms pre-roll in " +
                      std::to_string(preroll.late_at_max()) + " of " +
                      std::to_string(preroll.at_max()) +
                      " iterations under it, so the spans hold its launch gaps; sampling stopped "
                      "there, not converged (the call clock times such a program as it runs)");
        }
        if (preroll.late_kept_ms() > 0.05) {
          AddNote(&note, std::string("the host still launched ") +
                             FormatMs(preroll.late_kept_ms()) + " ms after " +
                             (preroll.shrinks() > 0 ? "the" : "the longest") +
                             " pre-roll ended in a sample");
        }
      }
    }
    return std::nullopt;
  }

  const v1::EvalRequest& req_;
  const EngineContext& ctx_;
  StageReporter& reporter_;
  v1::EvalResult result_;
  std::unique_ptr<py::scoped_interpreter> interpreter_;
  Target target_;
  uint64_t seed_ = 0, init_seed_ = 0;
  py::object task_, ref_model_;
  std::unique_ptr<CandidateClient> client_;  // the candidate process
  CallProfile ref_profile_;  // KFORGE_CALL_PROFILE only: the reference's samples, both clocks
  std::unique_ptr<DeviceClock> judge_clock_;  // the reference's device clock
  Clock::time_point timing_started_;          // the timing stage's start
  CandidateFiles files_;                     // the candidate's cache namespace
  std::string arch_;
  bool strict_ = true;               // policy strict: the static rules apply
  bool fresh_timing_inputs_ = true;  // QuickInputs(), decided in LoadTask
  double call_overhead_ms_ = 0;      // CalibrateCalls: subtracted from candidate call samples
  uint32_t trial_calls_ = 0, timed_calls_ = 0;
  std::optional<std::vector<std::string>> defined_kernels_;  // DefinedKernels, once read
  // The last correctness trial's reference outputs (only their layout is used) and their
  // AliasBits against its inputs: the timing's output slots and aliasing (TimePhase).
  std::vector<at::Tensor> ref_out_like_;
  std::vector<uint64_t> ref_aliases_;
};

}  // namespace

v1::EvalResult Evaluate(const v1::EvalRequest& request, const EngineContext& context,
                        StageReporter& reporter) {
  // Never destroyed: the evaluation process delivers the result and leaves with _exit
  // (supervisor.h), and the supervisor then kills its process group. Destroying it first would
  // put the reference's, the device clock's and the interpreter's teardown before the answer.
  auto* e = new Evaluation(request, context, reporter);
  return e->Run();
}

}  // namespace kforge::eval
