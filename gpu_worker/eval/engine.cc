#include "gpu_worker/eval/engine.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <cuda_runtime_api.h>
#include <pybind11/embed.h>
#include <torch/csrc/autograd/python_variable.h>

#include <deque>
#include <fstream>
#include <random>

#include "common/base/sha256.h"
#include "gpu_worker/eval/candidate_files.h"
#include "gpu_worker/eval/compare.h"
#include "gpu_worker/eval/cpp_dialect.h"
#include "gpu_worker/eval/model_io.h"
#include "gpu_worker/eval/nvrtc_module.h"
#include "gpu_worker/eval/python_runtime.h"
#include "gpu_worker/eval/static_checks.h"
#include "gpu_worker/eval/system_info.h"
#include "gpu_worker/eval/timing.h"

namespace py = pybind11;

namespace kforge::eval {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kDefaultTrials = 5;
// Timing inputs are fresh for every iteration when get_inputs() and the copy for the candidate
// take at most this long; otherwise up to kTimingInputSets sets rotate, fewer above
// kMaxTimingSetBytes.
constexpr double kFreshInputsMaxMs = 25;
constexpr int kTimingInputSets = 3;
constexpr int64_t kMaxTimingSetBytes = 4LL << 30;
constexpr double kMaxPrerollMs = 5;  // EvalRequest.timing_preroll_ms

std::string FormatMs(double ms) {
  std::ostringstream s;
  s << ms;
  return s.str();
}

void KeepSamples(const ProgramSamples& p, TimingClock clock, int sets, v1::TimingStats* stats) {
  auto add = [](const std::vector<double>& v, google::protobuf::RepeatedField<double>* to) {
    to->Add(v.begin(), v.end());
  };
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

uint64_t SecretSeed(uint64_t requested) {
  if (requested != 0) return requested;
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

// Seed for trial t derived from the secret seed (SplitMix64 step).
uint64_t DeriveSeed(uint64_t seed, uint64_t t) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (t + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (z ^ (z >> 31)) & 0x7fffffffffffffffULL;
}

// True when some element of a floating-point output is exactly the poison pattern (all bits
// set), i.e. memory the candidate returned without writing. Computed NaNs are canonical
// (0x7fc0...), never all ones.
bool HoldsPoison(const at::Tensor& t) {
  if (!t.is_floating_point() || t.numel() == 0 || !t.is_contiguous()) return false;
  at::ScalarType as_int;
  switch (t.element_size()) {
    case 2:
      as_int = at::kShort;
      break;
    case 4:
      as_int = at::kInt;
      break;
    case 8:
      as_int = at::kLong;
      break;
    default:
      return false;
  }
  return t.view(as_int).eq(-1).any().item<bool>();
}

// Where the correctness trials' time goes: StageDurations' correctness_* fields.
struct TrialTimes {
  double inputs = 0, reference = 0, poison = 0, candidate = 0, outputs = 0, inputs_unchanged = 0,
         compare = 0;
};

// Carries a verdict out of the stages.
struct Verdict {
  v1::Verdict verdict;
  std::string reason;
  std::string rule;
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
    result_.set_reason(v->reason);
    result_.set_rule(v->rule);
    if (v->verdict == v1::VERDICT_OK && req_.build_only()) {
      result_.set_stage("built");
      result_.clear_speedup();
    } else if (v->verdict == v1::VERDICT_OK) {
      result_.set_stage("done");
      result_.set_speedup(result_.reference().median_ms() / result_.candidate().median_ms());
    } else {
      result_.clear_speedup();
    }
    result_.mutable_stages()->set_total_s(
        std::chrono::duration<double>(Clock::now() - ctx_.process_start).count());
    FlushPythonOutput();
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
    RuleViolation rv =
        CheckCandidateSource(req_.candidate_source(), dialect, req_.task_source());
    if (rv.fired()) return Verdict{v1::VERDICT_REJECTED, rv.reason, rv.rule};
    // Still single-threaded, before any task or candidate code: the last moment to write shared
    // cache entries, then the lock (candidate_files.h).
    files_ = CandidateFilesFor(ctx_.cache_dir, req_.candidate_source());
    if (dialect == v1::DIALECT_CPP) PrepareCppPch(CppConfig());  // a failure shows in the build
    LockToCandidateFiles(ctx_.cache_dir, &files_);
    Enter(Stage::kLoad);
    auto t = Clock::now();
    if (!Py_IsInitialized()) {  // a fork server's child inherits a running interpreter
      std::string error;
      interpreter_ = StartPython(&error);
      if (!interpreter_) return Verdict{v1::VERDICT_RUNTIME_ERROR, error, "engine_error"};
    }
    result_.mutable_stages()->set_startup_s(
        std::chrono::duration<double>(Clock::now() - ctx_.process_start).count());
    try {
      t = Clock::now();
      if (auto v = SetUpDevice()) return v;
      result_.mutable_stages()->set_device_s(Since(t));
      t = Clock::now();
      if (auto v = LoadTask()) return v;
      result_.mutable_stages()->set_load_task_s(Since(t));
      Enter(Stage::kBuild);
      t = Clock::now();
      auto v = dialect == v1::DIALECT_CPP ? BuildCpp() : Build(dialect);
      result_.mutable_stages()->set_build_s(Since(t));
      if (dialect != v1::DIALECT_CPP) result_.set_compiler_log(GetNvrtcCompileStats().last_log);
      if (v) return v;
      if (req_.build_only()) return Verdict{v1::VERDICT_OK, "built (build only)", ""};
      Enter(Stage::kCorrectness);
      t = Clock::now();
      v = Correctness(dialect);
      result_.mutable_stages()->set_correctness_s(Since(t));
      if (v) return v;
      Enter(Stage::kTiming);
      t = Clock::now();
      v = Timing(dialect);
      result_.mutable_stages()->set_timing_s(Since(t));
      return v;
    } catch (const py::error_already_set& e) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR, DescribePythonError(e), ""};
    } catch (const std::exception& e) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR, e.what(), ""};
    }
  }

  std::optional<Verdict> SetUpDevice() {
    const std::string& d = req_.device().empty() ? std::string("cuda") : req_.device();
    if (!(req_.timing_preroll_ms() >= 0 && req_.timing_preroll_ms() <= kMaxPrerollMs)) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR,
                     "timing_preroll_ms must be between 0 and " + FormatMs(kMaxPrerollMs) +
                         " ms, not " + FormatMs(req_.timing_preroll_ms()),
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
      if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        cudaGetLastError();
        return Verdict{v1::VERDICT_RUNTIME_ERROR,
                       "no CUDA device is available (use --device cpu on machines without a "
                       "GPU)",
                       "no_gpu"};
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
    ConfigureNvrtc({arch, target_.cuda, target_.index, files_.nvrtc_dir});
    py::module_ torch = py::module_::import("torch");
    result_.mutable_system()->set_torch_version(py::str(torch.attr("__version__")));
    return std::nullopt;
  }

  std::optional<Verdict> LoadTask() {
    seed_ = SecretSeed(req_.seed());
    try {
      task_ = ExecModule("kforge_task", req_.task_source());
      for (const char* name : {"Model", "get_inputs", "get_init_inputs"}) {
        if (!py::hasattr(task_, name)) {
          return Verdict{v1::VERDICT_RUNTIME_ERROR,
                         std::string("the task defines no ") + name, "task_error"};
        }
      }
      init_seed_ = DeriveSeed(seed_, 1000);
      SeedAll(init_seed_);
      init_inputs_ = ToDevice(task_.attr("get_init_inputs")(), Target{});
      if (req_.build_only()) {  // the reference is not needed to build
        switches_ = SwitchSnapshot();
        return std::nullopt;
      }
      SeedAll(init_seed_);
      ref_model_ = CallOnDevice(task_.attr("Model"), target_, init_inputs_).attr("to")(target_.name());
      fresh_timing_inputs_ = QuickInputs();
    } catch (const py::error_already_set& e) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR, "the task failed to load: " + DescribePythonError(e),
                     "task_error"};
    }
    switches_ = SwitchSnapshot();
    return std::nullopt;
  }

  std::optional<Verdict> Build(v1::Dialect dialect) {
    if (!files_.torch_extensions_dir.empty()) {
      // load_inline builds land in the candidate's namespace; os.environ, because the
      // interpreter keeps its own copy of the environment.
      py::module_::import("os").attr("environ")["TORCH_EXTENSIONS_DIR"] =
          files_.torch_extensions_dir;
    }
    try {
      candidate_ = ExecModule("kforge_candidate", req_.candidate_source());
    } catch (const py::error_already_set& e) {
      std::string what = DescribePythonError(e);
      // An ImportError in a build ahead (no GPU visible) may not happen on the GPU: there it is
      // a runtime_error, which the worker does not take as final.
      bool compile = e.matches(PyExc_SyntaxError) ||
                     (e.matches(PyExc_ImportError) && !req_.build_only()) ||
                     what.find("CompileError") != std::string::npos ||
                     what.find("Error building extension") != std::string::npos;
      return Verdict{compile ? v1::VERDICT_COMPILE_ERROR : v1::VERDICT_RUNTIME_ERROR,
                     std::string(compile ? "the candidate did not build: "
                                         : "the candidate failed while loading: ") +
                         what,
                     ""};
    }
    if (!py::hasattr(candidate_, "ModelNew")) {
      return Verdict{v1::VERDICT_REJECTED, "missing_model: the candidate defines no ModelNew",
                     "missing_model"};
    }
    try {
      SeedAll(init_seed_);
      cand_model_ =
          CallOnDevice(candidate_.attr("ModelNew"), target_, init_inputs_).attr("to")(target_.name());
      if (!req_.build_only()) CopyMatchingState(ref_model_, cand_model_);
    } catch (const py::error_already_set& e) {
      std::string what = DescribePythonError(e);
      return Verdict{v1::VERDICT_RUNTIME_ERROR, "ModelNew could not be constructed: " + what,
                     what.find("no GPU (CPU mode)") != std::string::npos ? "no_gpu" : ""};
    }
    if (SwitchSnapshot() != switches_) {
      return Verdict{v1::VERDICT_REJECTED,
                     "global_switch: building the candidate changed process-wide torch settings "
                     "(TF32, cudnn or precision flags), which would also change the reference",
                     "global_switch"};
    }
    return std::nullopt;
  }

  // The cpp dialect: host-compile the candidate, load it, hand it the reference's parameters.
  CppBuildConfig CppConfig() const {
    CppBuildConfig cfg;
    cfg.cache_dir = ctx_.cache_dir.empty() ? "" : ctx_.cache_dir + "/cpp";
    cfg.objects_dir = files_.cpp_objects_dir;
    cfg.nvrtc_cache_dir = files_.nvrtc_dir;
    return cfg;
  }

  std::optional<Verdict> BuildCpp() {
    CppBuildConfig cfg = CppConfig();
    cfg.arch = arch_;
    cfg.gpu_available = target_.cuda;
    cfg.device_index = target_.index;
    CppBuildResult b = BuildCppCandidate(req_.candidate_source(), cfg);
    result_.set_compiler_log(b.log);
    result_.mutable_stages()->set_build_host_compile_s(b.host_compile_s);
    result_.mutable_stages()->set_build_kernel_compile_s(b.kernel_compile_s);
    result_.mutable_stages()->set_build_load_s(b.load_s);
    if (!b.candidate) {
      if (b.compile_error) {
        return Verdict{v1::VERDICT_COMPILE_ERROR, b.error, ""};
      }
      return Verdict{v1::VERDICT_RUNTIME_ERROR, b.error, "engine_error"};
    }
    cpp_ = std::move(b.candidate);
    if (req_.build_only()) return std::nullopt;
    std::vector<at::Tensor> params;
    py::dict state = ref_model_.attr("state_dict")();
    for (auto item : state) {
      if (THPVariable_Check(item.second.ptr())) {
        params.push_back(THPVariable_Unpack(item.second.ptr()).detach().clone());
      }
    }
    CppCallStatus s = cpp_->Init(params);
    if (!s.ok()) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR, "init failed: " + s.error,
                     s.no_gpu ? "no_gpu" : ""};
    }
    if (SwitchSnapshot() != switches_) {
      return Verdict{v1::VERDICT_REJECTED,
                     "global_switch: building the candidate changed process-wide torch settings",
                     "global_switch"};
    }
    return std::nullopt;
  }

  // Runs the candidate on `inputs`: ModelNew for the Python dialects, forward() for cpp.
  // Throws pybind11::error_already_set or std::runtime_error (prefixed "cpp: ") on failure.
  py::object CallCandidate(const py::list& inputs, uint64_t* own_launches) {
    if (!cpp_) {
      uint64_t before = NvrtcLaunchCount();
      at::NoGradGuard no_grad;
      py::object out = cand_model_(*inputs);
      *own_launches = NvrtcLaunchCount() - before;
      return out;
    }
    uint64_t before = cpp_->launches();
    std::vector<at::Tensor> outs;
    CppCallStatus s = cpp_->Forward(TensorsOf(inputs), &outs);
    *own_launches = cpp_->launches() - before;
    if (!s.ok()) {
      throw std::runtime_error(std::string(s.no_gpu ? "no GPU (CPU mode): " : "") + s.error);
    }
    py::tuple t(outs.size());
    for (size_t i = 0; i < outs.size(); ++i) t[i] = py::reinterpret_steal<py::object>(THPVariable_Wrap(outs[i]));
    return outs.size() == 1 ? py::object(t[0]) : py::object(t);
  }

  void Synchronize() {
    if (!target_.cuda) return;
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      throw std::runtime_error(std::string("CUDA error after the candidate ran: ") +
                               cudaGetErrorString(e));
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

  // `returns_input` when a candidate output shares memory with one of its inputs where the
  // reference's output does not share it with the reference's inputs. `where` prefixes the
  // reason ("" in the trials).
  static std::optional<Verdict> ReturnsInput(const std::vector<at::Tensor>& ref_out,
                                             const std::vector<at::Tensor>& ref_in,
                                             const std::vector<at::Tensor>& cand_out,
                                             const std::vector<at::Tensor>& cand_in,
                                             const std::string& where) {
    for (size_t o = 0; o < cand_out.size(); ++o) {
      for (size_t i = 0; i < cand_in.size() && i < ref_in.size(); ++i) {
        bool ref_aliases = o < ref_out.size() && SharesMemory(ref_out[o], ref_in[i]);
        if (!ref_aliases && SharesMemory(cand_out[o], cand_in[i])) {
          return Verdict{v1::VERDICT_REJECTED,
                         "returns_input: " + where + "output " + std::to_string(o) +
                             " shares memory with input " + std::to_string(i),
                         "returns_input"};
        }
      }
    }
    return std::nullopt;
  }

  // `host_memory` for output `o` in pinned host or managed memory tagged as CUDA: the host
  // could write it with no kernel or copy the activity clock would see.
  static std::optional<Verdict> HostMemory(const at::Tensor& out, size_t o,
                                           const std::string& where) {
    if (InDeviceMemory(out)) return std::nullopt;
    return Verdict{v1::VERDICT_REJECTED,
                   "host_memory: " + where + "output " + std::to_string(o) +
                       " is a CUDA tensor whose memory is not device memory (pinned host or "
                       "managed memory); outputs must live in device memory",
                   "host_memory"};
  }

  // `output_cache` for output `o` when it is memory the candidate returned before (`earlier`,
  // held alive so that a fresh allocation cannot land on it).
  static std::optional<Verdict> ReusedOutput(const at::Tensor& out, size_t o,
                                             const std::vector<at::Tensor>& earlier,
                                             const std::string& where) {
    for (const at::Tensor& e : earlier) {
      if (SharesMemory(out, e)) {
        return Verdict{v1::VERDICT_REJECTED,
                       "output_cache: " + where + "output " + std::to_string(o) +
                           " is the same memory the candidate returned for earlier inputs",
                       "output_cache"};
      }
    }
    return std::nullopt;
  }

  // `input_mutation` when the candidate's copy of the inputs no longer equals the reference's
  // after both ran (the candidate changed its own, or reached the reference's).
  static std::optional<Verdict> ChangedInput(const std::vector<at::Tensor>& ref_in,
                                             const std::vector<at::Tensor>& cand_in,
                                             const std::string& where) {
    for (size_t i = 0; i < cand_in.size() && i < ref_in.size(); ++i) {
      if (!at::equal(cand_in[i], ref_in[i])) {
        return Verdict{v1::VERDICT_REJECTED,
                       "input_mutation: " + where + "input " + std::to_string(i) +
                           " was modified by the candidate",
                       "input_mutation"};
      }
    }
    return std::nullopt;
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
    SeedAll(seed);
    py::list inputs = ToDevice(CallOnDevice(task_.attr("get_inputs"), target_), target_);
    py::list cand_inputs = CloneInputs(inputs);
    Synchronize();
    count(&TrialTimes::inputs);
    py::object ref_out;
    {
      at::NoGradGuard no_grad;
      ref_out = ref_model_(*inputs);
    }
    Synchronize();
    count(&TrialTimes::reference);
    Outputs ref = OutputsToTensors(ref_out);
    if (!ref.error.empty()) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR, "the reference " + ref.error, "task_error"};
    }
    int64_t out_bytes = 0;
    for (const auto& t : ref.tensors) out_bytes += static_cast<int64_t>(t.nbytes());
    PoisonFreeMemory(target_, 2 * out_bytes + (1 << 20));
    Synchronize();
    count(&TrialTimes::poison);
    uint64_t own_launches = 0;
    py::object cand_out;
    std::string what;  // the candidate's own failure, if any
    try {
      cand_out = CallCandidate(cand_inputs, &own_launches);
    } catch (const py::error_already_set& e) {
      what = DescribePythonError(e);
    } catch (const std::exception& e) {
      what = e.what();
    }
    if (what.empty()) Synchronize();  // a kernel fault surfaces here (runtime_error)
    count(&TrialTimes::candidate);
    if (!what.empty()) {
      if (what.find("no GPU (CPU mode)") != std::string::npos) {
        return Verdict{v1::VERDICT_RUNTIME_ERROR,
                       "not run: the candidate's kernels compiled for " +
                           std::string(req_.arch().empty() ? "sm_90" : req_.arch()) +
                           " but cannot run without a GPU (CPU mode); correctness and timing "
                           "were not checked",
                       "no_gpu"};
      }
      return Verdict{v1::VERDICT_RUNTIME_ERROR, "the candidate raised: " + what, ""};
    }
    Outputs cand = OutputsToTensors(cand_out);
    if (!cand.error.empty()) {
      return Verdict{v1::VERDICT_INCORRECT, "the candidate " + cand.error, ""};
    }
    if (cand.subclass) {
      return Verdict{v1::VERDICT_REJECTED,
                     "lazy_tensor: the candidate returned a torch.Tensor subclass; outputs must "
                     "be plain tensors computed in forward",
                     "lazy_tensor"};
    }
    for (size_t o = 0; o < cand.tensors.size(); ++o) {
      if (auto v = HostMemory(cand.tensors[o], o, "")) return v;
      if (HoldsPoison(cand.tensors[o])) {
        return Verdict{v1::VERDICT_REJECTED,
                       "stale_memory: output " + std::to_string(o) +
                           " still holds the engine's poison bytes where the candidate never "
                           "wrote",
                       "stale_memory"};
      }
      if (auto v = ReusedOutput(cand.tensors[o], o, previous_outputs_, "")) return v;
    }
    // Held until the next trial, so a fresh allocation can never land on the same memory.
    previous_outputs_ = cand.tensors;
    bool must_launch = dialect == v1::DIALECT_NVRTC ||
                       (dialect == v1::DIALECT_CPP && target_.cuda && cpp_->has_kernels());
    if (must_launch && own_launches == 0) {
      return Verdict{v1::VERDICT_REJECTED,
                     "fallback: the candidate's forward launched none of its own kernels",
                     "fallback"};
    }
    count(&TrialTimes::outputs);
    std::vector<at::Tensor> in_tensors = TensorsOf(inputs);
    std::vector<at::Tensor> cand_in = TensorsOf(cand_inputs);
    if (auto v = ChangedInput(in_tensors, cand_in, "")) return v;
    count(&TrialTimes::inputs_unchanged);
    if (auto v = ReturnsInput(ref.tensors, in_tensors, cand.tensors, cand_in, "")) return v;
    Comparison cmp = CompareOutputs(ref.tensors, cand.tensors, TaskTolerance(ref));
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
    if (SwitchSnapshot() != switches_) {
      return Verdict{v1::VERDICT_REJECTED,
                     "global_switch: the candidate changed process-wide torch settings while "
                     "running",
                     "global_switch"};
    }
    return std::nullopt;
  }

  std::optional<Verdict> Correctness(v1::Dialect dialect) {
    uint32_t trials = req_.correctness_trials() ? req_.correctness_trials() : kDefaultTrials;
    auto* report = result_.mutable_correctness();
    TrialTimes times;
    std::optional<Verdict> v;
    for (uint32_t t = 0; t < trials && !v; ++t) {
      report->set_trials(t + 1);
      v = Trial(DeriveSeed(seed_, t), dialect, nullptr, times);
      if (!v) report->set_trials_passed(t + 1);
    }
    v1::StageDurations* st = result_.mutable_stages();
    st->set_correctness_inputs_s(times.inputs);
    st->set_correctness_reference_s(times.reference);
    st->set_correctness_poison_s(times.poison);
    st->set_correctness_candidate_s(times.candidate);
    st->set_correctness_outputs_s(times.outputs);
    st->set_correctness_inputs_unchanged_s(times.inputs_unchanged);
    st->set_correctness_compare_s(times.compare);
    return v;
  }

  // One iteration's inputs: the reference's and the candidate's own copy.
  struct TimedInputs {
    py::list ref, cand;
    std::vector<at::Tensor> cand_tensors;  // the cpp dialect's view of `cand`
  };

  TimedInputs MakeTimedInputs(uint64_t seed) {
    SeedAll(seed);
    TimedInputs in;
    in.ref = ToDevice(CallOnDevice(task_.attr("get_inputs"), target_), target_);
    in.cand = CloneInputs(in.ref);
    in.cand_tensors = TensorsOf(in.cand);
    return in;
  }

  // After a timed iteration, as in the trials: both programs' inputs unchanged (the
  // candidate's copy and the reference's set, which a candidate holding raw device pointers
  // could reach); the candidate's outputs in device memory, not its inputs, not memory it
  // returned in the iterations in `held` (which keeps the last `keep` alive; rotating sets
  // only, else 0), and within tolerance of the reference's on the same inputs. A candidate that behaves only
  // while untimed (work skipped once the calls come fast, a result replayed for inputs seen
  // before) is caught here. Wrong values are `incorrect`, rule timed_outputs: a kernel that is
  // right only most of the time fails here without being a hack.
  std::optional<Verdict> CheckTimedOutputs(uint32_t iteration, const TimedInputs& in,
                                           const py::object& ref_out, const py::object& cand_out,
                                           const std::vector<at::Tensor>& cand_cpp_out,
                                           std::deque<std::vector<at::Tensor>>* held,
                                           size_t keep) {
    const std::string where =
        "in iteration " + std::to_string(iteration) + " of the timing stage, ";
    Outputs ref = OutputsToTensors(ref_out);
    if (!ref.error.empty()) {
      return Verdict{v1::VERDICT_RUNTIME_ERROR, "the reference " + ref.error, "task_error"};
    }
    const std::vector<at::Tensor> ref_in = TensorsOf(in.ref);
    if (auto v = ChangedInput(ref_in, in.cand_tensors, where)) return v;
    Outputs cand;
    if (cpp_) {
      cand.tensors = cand_cpp_out;
    } else {
      cand = OutputsToTensors(cand_out);
    }
    std::string wrong;
    if (!cand.error.empty()) wrong = "the candidate " + cand.error;
    if (cand.subclass) wrong = "the candidate returned a torch.Tensor subclass";
    for (size_t o = 0; wrong.empty() && o < cand.tensors.size(); ++o) {
      if (auto v = HostMemory(cand.tensors[o], o, where)) return v;
      for (const auto& earlier : *held) {
        if (auto v = ReusedOutput(cand.tensors[o], o, earlier, where)) return v;
      }
    }
    if (wrong.empty()) {
      if (auto v = ReturnsInput(ref.tensors, ref_in, cand.tensors, in.cand_tensors, where)) {
        return v;
      }
      Comparison cmp = CompareOutputs(ref.tensors, cand.tensors, TaskTolerance(ref));
      RecordErrors(cmp);
      if (!cmp.ok) wrong = cmp.reason;
    }
    if (!wrong.empty()) {
      return Verdict{v1::VERDICT_INCORRECT,
                     "timed_outputs: correct during the trials but wrong " + where +
                         "against the reference on the same inputs (" + wrong + ")",
                     "timed_outputs"};
    }
    if (keep > 0) {
      held->push_back(cand.tensors);
      if (held->size() > keep) held->pop_front();
    }
    return std::nullopt;
  }

  // Whether get_inputs() (plus the candidate's copy) is quick enough for fresh inputs in every
  // timing iteration: one try, or two when the first is slow (it may pay for first use),
  // made before the candidate exists (so it cannot slow them down to get rotating sets).
  bool QuickInputs() {
    for (int k = 0; k < 2; ++k) {
      auto made = Clock::now();
      { TimedInputs probe = MakeTimedInputs(DeriveSeed(seed_, 1900 + k)); }
      Synchronize();
      if (Since(made) * 1000 <= kFreshInputsMaxMs) return true;
    }
    return false;
  }

  std::optional<Verdict> Timing(v1::Dialect dialect) {
    SampleClocks(target_.cuda ? target_.index : -1, result_.mutable_system());
    // Fresh inputs for every iteration, so that no call sees inputs an earlier call saw: an
    // output memoised by input pointer or content cannot be replayed. Where get_inputs() is
    // too slow for that (decided in LoadTask), up to kTimingInputSets sets rotate
    // (docs/evaluation.md, "Timing").
    const bool fresh = fresh_timing_inputs_;
    std::vector<TimedInputs> sets;
    sets.push_back(MakeTimedInputs(DeriveSeed(seed_, 2000)));
    if (!fresh) {
      int64_t set_bytes = 0;
      for (const auto& t : TensorsOf(sets[0].ref)) set_bytes += t.nbytes();
      for (int k = 1; k < kTimingInputSets && set_bytes * (k + 1) <= kMaxTimingSetBytes; ++k) {
        sets.push_back(MakeTimedInputs(DeriveSeed(seed_, 2000 + k)));
      }
    }
    py::object ref_out = py::none(), cand_out = py::none();
    std::vector<at::Tensor> cand_cpp_out;
    std::deque<std::vector<at::Tensor>> held;  // rotating sets: earlier iterations' outputs
    std::optional<Verdict> timed_verdict;
    uint32_t iterations = 0;
    int current = 0;  // the iteration's set
    IterationHooks hooks;
    hooks.before = [&](uint32_t it) {
      iterations = it + 1;
      if (!fresh) return current = static_cast<int>(it % sets.size());
      if (it > 0) {
        sets.clear();  // freed before the next set is made
        sets.push_back(MakeTimedInputs(DeriveSeed(seed_, 2000 + it)));
      }
      return current = 0;
    };
    hooks.after = [&](uint32_t it) {
      timed_verdict = CheckTimedOutputs(it, sets[current], ref_out, cand_out, cand_cpp_out,
                                        &held, fresh ? 0 : sets.size());
      ref_out = cand_out = py::none();  // freed outside the timed region
      cand_cpp_out.clear();
      return !timed_verdict;
    };
    Program ref = [&](int s) {
      at::NoGradGuard g;
      ref_out = ref_model_(*sets[s].ref);
    };
    Program cand = [&](int s) {
      if (cpp_) {
        // Tensors prepared outside the timed region: nothing touches Python here.
        CppCallStatus st = cpp_->Forward(sets[s].cand_tensors, &cand_cpp_out);
        if (!st.ok()) throw std::runtime_error("cpp: " + st.error);
        return;
      }
      at::NoGradGuard g;
      cand_out = cand_model_(*sets[s].cand);
    };
    TimingOptions o;
    o.cuda = target_.cuda;
    o.device = target_.index;
    o.l2_bytes = result_.system().l2_cache_bytes();
    if (req_.min_samples()) o.min_samples = req_.min_samples();
    if (req_.max_rel_stderr() > 0) o.max_rel_stderr = req_.max_rel_stderr();
    o.preroll_ms = o.cuda ? req_.timing_preroll_ms() : 0;
    o.clock = req_.timing_clock() == "events" ? TimingClock::kEvents : TimingClock::kActivity;
    o.require_clock = req_.timing_clock() == "activity";
    o.time_cap_s = ctx_.timing_budget_s;
    TimingOutcome out = TimeInterleaved(ref, cand, o, hooks);
    if (timed_verdict) return timed_verdict;
    const int input_sets = fresh ? static_cast<int>(iterations) : static_cast<int>(sets.size());
    sets.clear();
    held.clear();
    *result_.mutable_reference() = out.reference;
    *result_.mutable_candidate() = out.candidate;
    result_.set_timing_preroll_ms(out.preroll_ms);
    result_.set_timing_clock(TimingClockName(out.clock));
    result_.set_timing_clock_note(out.clock_note);
    if (req_.keep_samples()) {
      KeepSamples(out.ref, out.clock, input_sets, result_.mutable_reference());
      KeepSamples(out.cand, out.clock, input_sets, result_.mutable_candidate());
    }
    if (out.hidden_work) {
      return Verdict{v1::VERDICT_REJECTED, "side_stream: " + out.hidden_work_detail, "side_stream"};
    }
    // Fresh inputs once more: outputs cached across calls are caught here.
    TrialTimes post_timing;
    return Trial(DeriveSeed(seed_, 900), dialect, "output_cache", post_timing);
  }

  const v1::EvalRequest& req_;
  const EngineContext& ctx_;
  StageReporter& reporter_;
  v1::EvalResult result_;
  std::unique_ptr<py::scoped_interpreter> interpreter_;
  Target target_;
  uint64_t seed_ = 0, init_seed_ = 0;
  py::object task_, candidate_, ref_model_, cand_model_;
  std::unique_ptr<CppCandidate> cpp_;  // the cpp dialect's loaded candidate
  CandidateFiles files_;               // its cache namespace
  std::string arch_;
  py::object init_inputs_;
  std::vector<at::Tensor> previous_outputs_;
  bool fresh_timing_inputs_ = true;  // QuickInputs(), decided in LoadTask
  std::string switches_;
};

}  // namespace

v1::EvalResult Evaluate(const v1::EvalRequest& request, const EngineContext& context,
                        StageReporter& reporter) {
  Evaluation e(request, context, reporter);
  v1::EvalResult r = e.Run();
  return r;
}

}  // namespace kforge::eval
