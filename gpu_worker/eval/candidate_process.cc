#include "gpu_worker/eval/candidate_process.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <cuda_runtime_api.h>
#include <pybind11/embed.h>
#include <torch/csrc/autograd/python_variable.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "gpu_worker/eval/audit_hook.h"
#include "gpu_worker/eval/build_failures.h"
#include "gpu_worker/eval/call_profile.h"
#include "gpu_worker/eval/candidate_lockdown.h"
#include "gpu_worker/eval/channel.h"
#include "gpu_worker/eval/cpp_dialect.h"
#include "gpu_worker/eval/model_io.h"
#include "gpu_worker/eval/nvrtc_module.h"
#include "gpu_worker/eval/own_kernels.h"
#include "gpu_worker/eval/python_runtime.h"
#include "gpu_worker/eval/runtime_rules.h"
#include "gpu_worker/eval/shared_slots.h"
#include "gpu_worker/eval/timing.h"

namespace py = pybind11;

namespace kforge::eval {
namespace {

using Clock = std::chrono::steady_clock;
namespace judge = v1::judge;

constexpr size_t kMaxJudgeFrame = 512u << 20;  // the sources travel in Load
constexpr size_t kMaxText = 16 << 10;          // logs and reasons sent back

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// "sm_90" -> (9, 0), "sm_100a" -> (10, 0); nothing for anything else.
std::optional<std::pair<int, int>> CapabilityOfArch(const std::string& arch) {
  size_t end = 3;
  while (end < arch.size() && std::isdigit(static_cast<unsigned char>(arch[end]))) ++end;
  if (arch.rfind("sm_", 0) != 0 || end < 5 || end > 6) return std::nullopt;
  return std::make_pair(std::stoi(arch.substr(3, end - 4)), arch[end - 1] - '0');
}

std::string Bounded(std::string s) {
  if (s.size() > kMaxText) s = s.substr(0, kMaxText / 2) + "\n[...]\n" + s.substr(s.size() - kMaxText / 2);
  return s;
}

bool IsCompileError(const std::string& what) {
  return what.find("CompileError") != std::string::npos ||
         what.find("Error building extension") != std::string::npos;
}

// Whether a candidate's source may import a kernel library (the import wrapper), and whether
// it may build an extension or import one (the build wrappers; build_failures.h).
bool NamesKernelLibrary(const std::string& source) {
  return source.find("cupy") != std::string::npos || source.find("pycuda") != std::string::npos;
}
bool BuildsKernels(const std::string& source) {
  return source.find("cpp_extension") != std::string::npos || NamesKernelLibrary(source);
}

class CandidateProcess {
 public:
  explicit CandidateProcess(int fd) : channel_(fd, kMaxJudgeFrame) {}

  [[noreturn]] void Serve() {
    for (;;) {
      judge::ToCandidate in;
      std::vector<int> fds;
      std::string error;
      if (!channel_.Receive(&in, &fds, &error)) Exit();  // the judge is done (or gone)
      Reply(Handle(in, fds));
    }
  }

 private:
  judge::FromCandidate Handle(const judge::ToCandidate& in, const std::vector<int>& fds) {
    judge::FromCandidate out;
    std::string error;
    try {
      switch (in.kind_case()) {
        case judge::ToCandidate::kLoad:
          *out.mutable_loaded() = Load(in.load());
          break;
        case judge::ToCandidate::kSlot:
          if (!slots_) {
            out.set_failed("a slot before Load");
          } else if (slots_->Map(in.slot(), fds.empty() ? -1 : fds[0], &error)) {
            out.set_slot_mapped(true);
          } else {
            out.set_failed(error);
          }
          break;
        case judge::ToCandidate::kCall:
          if (in.call().null_call() != calibrating_) {
            out.set_failed(calibrating_ ? "a call while calibrating" : "a null call after calibration");
          } else {
            *out.mutable_called() = Call(in.call());
          }
          break;
        default:
          out.set_failed("an unexpected message");
      }
    } catch (const py::error_already_set& e) {
      out.set_failed(Bounded(DescribePythonError(e)));
    } catch (const std::exception& e) {
      out.set_failed(Bounded(e.what()));
    }
    return out;
  }

  void Reply(const judge::FromCandidate& out) {
    std::string error;
    Flush();
    if (!channel_.Send(out, &error)) Exit();
  }

  // Load.calibrate: null calls, timed by the judge, answered the way every call is (Call and
  // Reply) before any task or candidate code has run in this process.
  void ServeCalibration() {
    calibrating_ = true;
    judge::FromCandidate ready;
    ready.set_calibrating(true);
    Reply(ready);
    for (;;) {
      judge::ToCandidate in;
      std::vector<int> fds;
      std::string error;
      if (!channel_.Receive(&in, &fds, &error)) Exit();
      if (in.kind_case() == judge::ToCandidate::kEndCalibration) break;
      Reply(Handle(in, fds));
    }
    calibrating_ = false;
  }

  [[noreturn]] void Exit() {
    Flush();
    _exit(0);  // no destructors: a CUDA context the candidate broke may hang in teardown
  }

  static void Flush() {
    try {
      py::module_ sys = py::module_::import("sys");
      for (const char* stream : {"stdout", "stderr"}) {
        py::object s = sys.attr(stream);
        if (!s.is_none()) s.attr("flush")();
      }
    } catch (const py::error_already_set&) {
    }
    fflush(stdout);
    fflush(stderr);
  }

  judge::Loaded Fail(judge::Loaded out, v1::Verdict v, const std::string& reason,
                     const std::string& rule = "") {
    out.set_verdict(v);
    out.set_reason(Bounded(reason));
    out.set_rule(rule);
    return out;
  }

  judge::Loaded Load(const judge::Load& req) {
    judge::Loaded out;
    if (loaded_) return Fail(out, v1::VERDICT_RUNTIME_ERROR, "Load sent twice", "engine_error");
    loaded_ = true;
    const std::string& d = req.device();
    target_.cuda = d.rfind("cuda", 0) == 0;
    target_.index = target_.cuda && d.size() > 5 ? std::atoi(d.c_str() + 5) : 0;
    std::string arch = req.arch();
    if (target_.cuda) {
      if (cudaSetDevice(target_.index) != cudaSuccess) {
        return Fail(out, v1::VERDICT_RUNTIME_ERROR, "the candidate process has no GPU " + d,
                    "no_gpu");
      }
      py::module_::import("torch").attr("cuda").attr("set_device")(target_.index);
      if (arch.empty()) {
        cudaDeviceProp p;
        cudaGetDeviceProperties(&p, target_.index);
        arch = "sm_" + std::to_string(p.major) + std::to_string(p.minor);
      }
    }
    if (arch.empty()) arch = "sm_90";
    slots_ = std::make_unique<SlotMap>(target_.cuda, target_.index);
    channel_.set_spin_us(ChannelSpinUs(target_.cuda));
    dialect_ = req.dialect();
    strict_ = req.strict();
    ConfigureNvrtc({arch, target_.cuda, target_.index, req.nvrtc_dir()});
    // After torch's own CUDA start-up (which loads libraries through ctypes), before any task
    // or candidate code. torch.cuda.device_count() asks NVML through ctypes until its answer is
    // cached, which it is once CUDA is initialised: torch.cuda.manual_seed_all and many more
    // call it, so it is asked here first.
    if (target_.cuda) {
      py::module_ cuda = py::module_::import("torch").attr("cuda");
      cuda.attr("init")();  // torch's own flag that CUDA is initialised, which the cache needs
      cuda.attr("device_count")();
    }
    if (dialect_ != v1::DIALECT_CPP && BuildsKernels(req.candidate_source())) {
      // A shortcut for builds that failed before, and the count of failed builds
      // (build_failures.h); the text test only saves the import for candidates that never
      // build an extension or import a kernel library.
      try {
        RememberFailedExtensionBuilds(NamesKernelLibrary(req.candidate_source()));
      } catch (const py::error_already_set& e) {
        std::fprintf(stderr, "kforge: failed builds will not be remembered: %s\n", e.what());
      }
    }
    std::string error;
    if (!InstallAuditHook(4, &error)) {
      std::fprintf(stderr, "kforge: the candidate process could not install its audit hook: %s\n",
                   error.c_str());
      _exit(3);
    }
    if (req.calibrate()) ServeCalibration();
    py::object environ = py::module_::import("os").attr("environ");
    if (!req.torch_extensions_dir().empty()) {
      environ["TORCH_EXTENSIONS_DIR"] = req.torch_extensions_dir();
    }
    if (!req.torch_compile_dir().empty()) {
      // torch.compile's code, compiled again in every process otherwise (build and first call
      // 10-24 s a process for CUDA-L1's 2_49, 2_75, 2_85 on the H200, session 16): Inductor
      // and Triton read these when they first need their caches.
      environ["TORCHINDUCTOR_CACHE_DIR"] = req.torch_compile_dir() + "/inductor";
      environ["TRITON_CACHE_DIR"] = req.torch_compile_dir() + "/triton";
      environ["CUPY_CACHE_DIR"] = req.torch_compile_dir() + "/cupy";  // cupy's kernels (cubins)
    }
    if (req.build_only() && !req.arch().empty()) {
      // A GPU worker's build ahead (no GPU visible, the slots' arch named): many candidates
      // build their extensions only `if torch.cuda.is_available()`, so the build is made here,
      // not in the GPU's turn. Only this process's build is affected; whatever then fails for
      // want of a GPU is a runtime_error, which is never final for a build ahead. The guard
      // often asks the capability too (`get_device_capability()[0] >= 7`): the arch's.
      py::module_ cuda = py::module_::import("torch").attr("cuda");
      cuda.attr("is_available") = py::cpp_function([] { return true; });
      if (std::optional<std::pair<int, int>> cc = CapabilityOfArch(req.arch())) {
        cuda.attr("get_device_capability") = py::cpp_function(
            [cc](py::args, py::kwargs) { return py::make_tuple(cc->first, cc->second); });
      }
    }
    switches_ = SwitchSnapshot();
    auto t = Clock::now();
    py::object task, ref_model;
    py::list init_inputs;
    try {
      task = ExecModule("kforge_task", req.task_source());
      SeedAll(req.init_seed());
      init_inputs = ToDevice(task.attr("get_init_inputs")(), Target{});
      if (!req.build_only()) {
        // KernelBench's weight semantics: the reference and ModelNew are both constructed on
        // the CPU right after the same seed, so parameters a candidate creates and initialises
        // itself (legacy constructors included) get the values the reference's got.
        SeedAll(req.init_seed());
        ref_model = task.attr("Model")(*init_inputs);
      }
    } catch (const py::error_already_set& e) {
      return Fail(out, v1::VERDICT_RUNTIME_ERROR,
                  "the task failed to load in the candidate process: " + DescribePythonError(e),
                  "task_error");
    }
    std::optional<judge::Loaded> failed = dialect_ == v1::DIALECT_CPP
                                              ? BuildCpp(req, arch, ref_model, &out)
                                              : BuildPython(req, init_inputs, ref_model, &out);
    out.set_build_s(Since(t));
    if (dialect_ != v1::DIALECT_CPP) out.set_compiler_log(Bounded(GetNvrtcCompileStats().last_log));
    if (failed) {
      failed->set_build_s(out.build_s());
      failed->set_compiler_log(out.compiler_log());
      return *failed;
    }
    if (auto v = BuildFallback("", nullptr)) return Fail(out, v->verdict, v->reason, v->rule);
    if (strict_ && SwitchSnapshot() != switches_) {
      return Fail(out, v1::VERDICT_REJECTED,
                  "global_switch: building the candidate changed process-wide torch settings "
                  "(TF32, cudnn or precision flags)",
                  "global_switch");
    }
    out.set_verdict(v1::VERDICT_OK);
    return out;
  }

  std::optional<judge::Loaded> BuildPython(const judge::Load& req, const py::list& init_inputs,
                                           const py::object& ref_model, judge::Loaded* out) {
    source_ = req.candidate_source();
    if (dialect_ != v1::DIALECT_NVRTC) defined_kernels_ = DefinedKernelNames(source_);
    init_seed_ = req.init_seed();
    init_inputs_ = init_inputs;
    try {
      candidate_ = ExecModule("kforge_candidate", req.candidate_source());
    } catch (const py::error_already_set& e) {
      std::string what = DescribePythonError(e);
      // An ImportError in a build ahead (no GPU visible) may not happen on the GPU: there it is
      // a runtime_error, which the worker does not take as final.
      bool compile = e.matches(PyExc_SyntaxError) ||
                     (e.matches(PyExc_ImportError) && !req.build_only()) || IsCompileError(what);
      return Fail(*out, compile ? v1::VERDICT_COMPILE_ERROR : v1::VERDICT_RUNTIME_ERROR,
                  std::string(compile ? "the candidate did not build: "
                                      : "the candidate failed while loading: ") +
                      what);
    }
    if (!py::hasattr(candidate_, "ModelNew")) {
      return Fail(*out, v1::VERDICT_REJECTED, "missing_model: the candidate defines no ModelNew",
                  "missing_model");
    }
    try {
      SeedAll(req.init_seed());
      py::object m = candidate_.attr("ModelNew")(*init_inputs);
      if (!req.build_only()) out->set_params_copied(CopyMatchingState(ref_model, m));
      model_ = m.attr("to")(target_.name());
    } catch (const py::error_already_set& e) {
      std::string what = DescribePythonError(e);
      // Kernels compiled in ModelNew.__init__ (kforge.cuda.compile, load_inline) that do not
      // compile are the candidate's compile error, not a runtime error.
      if (IsCompileError(what)) {
        return Fail(*out, v1::VERDICT_COMPILE_ERROR,
                    "the candidate did not build (in ModelNew's constructor): " + what);
      }
      return Fail(*out, v1::VERDICT_RUNTIME_ERROR, "ModelNew could not be constructed: " + what,
                  what.find("no GPU (CPU mode)") != std::string::npos ? "no_gpu" : "");
    }
    return std::nullopt;
  }

  std::optional<judge::Loaded> BuildCpp(const judge::Load& req, const std::string& arch,
                                        const py::object& ref_model, judge::Loaded* out) {
    CppBuildConfig cfg;
    cfg.cache_dir = req.cpp_cache_dir();
    cfg.objects_dir = req.cpp_objects_dir();
    cfg.nvrtc_cache_dir = req.nvrtc_dir();
    cfg.arch = arch;
    cfg.gpu_available = target_.cuda;
    cfg.device_index = target_.index;
    CppBuildResult b = BuildCppCandidate(req.candidate_source(), cfg);
    out->set_compiler_log(Bounded(b.log));
    out->set_build_host_compile_s(b.host_compile_s);
    out->set_build_kernel_compile_s(b.kernel_compile_s);
    out->set_build_load_s(b.load_s);
    if (!b.candidate) {
      return Fail(*out, b.compile_error ? v1::VERDICT_COMPILE_ERROR : v1::VERDICT_RUNTIME_ERROR,
                  b.error, b.compile_error ? "" : "engine_error");
    }
    cpp_ = std::move(b.candidate);
    if (req.build_only()) return std::nullopt;
    std::vector<at::Tensor> params;
    py::dict state = ref_model.attr("state_dict")();
    for (auto item : state) {
      if (THPVariable_Check(item.second.ptr())) {
        params.push_back(THPVariable_Unpack(item.second.ptr()).detach().to(target_.device()));
      }
    }
    CppCallStatus s = cpp_->Init(params);
    if (!s.ok()) {
      return Fail(*out, v1::VERDICT_RUNTIME_ERROR, "init failed: " + s.error,
                  s.no_gpu ? "no_gpu" : "");
    }
    return std::nullopt;
  }

  // The call's arguments as Python objects; the tensors among them in `tensors`.
  bool Args(const judge::Call& call, py::list* args, std::vector<at::Tensor>* tensors,
            std::string* error) {
    for (const judge::Arg& a : call.args()) {
      switch (a.kind_case()) {
        case judge::Arg::kTensor: {
          at::Tensor t = slots_->View(a.tensor(), error);
          if (!t.defined()) return false;
          tensors->push_back(t);
          args->append(py::reinterpret_steal<py::object>(THPVariable_Wrap(t)));
          break;
        }
        case judge::Arg::kIntValue:
          args->append(py::int_(a.int_value()));
          break;
        case judge::Arg::kFloatValue:
          args->append(py::float_(a.float_value()));
          break;
        case judge::Arg::kBoolValue:
          args->append(py::bool_(a.bool_value()));
          break;
        case judge::Arg::kStrValue:
          args->append(py::str(a.str_value()));
          break;
        default:
          args->append(py::none());
      }
    }
    return true;
  }

  // Runs forward; its outputs in `outputs` (a Python dialect's subclass flag in `subclass`).
  std::string Forward(const py::list& args, const std::vector<at::Tensor>& tensors,
                      std::vector<at::Tensor>* outputs, bool* subclass, bool* no_gpu) {
    if (calibrating_) {  // a null call: one zero, as a forward would make it
      *outputs = {at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(target_.device()))};
      return "";
    }
    if (cpp_) {
      CppCallStatus s = cpp_->Forward(tensors, outputs);
      *no_gpu = s.no_gpu;
      return s.error;
    }
    py::object out;
    try {
      at::NoGradGuard no_grad;
      out = model_(*args);
    } catch (const py::error_already_set& e) {
      std::string what = DescribePythonError(e);
      *no_gpu = what.find("no GPU (CPU mode)") != std::string::npos;
      return what;
    }
    Outputs o = OutputsToTensors(out);
    if (!o.error.empty()) return "!" + o.error;  // not a runtime error: a wrong answer
    *subclass = o.subclass;
    *outputs = std::move(o.tensors);
    return "";
  }

  uint64_t Launches() const { return cpp_ ? cpp_->launches() : NvrtcLaunchCount(); }

  judge::Called Call(const judge::Call& call) {
    judge::Called out;
    const auto started = Clock::now();
    auto stamp = [&] {
      if (CallProfileOn()) out.add_profile_us(Since(started) * 1e6);
    };
    if (!model_ && !cpp_ && !calibrating_) {
      out.set_error("the candidate is not loaded");
      return out;
    }
    py::list args;
    std::vector<at::Tensor> in;
    std::string error;
    if (!Args(call, &args, &in, &error)) {
      out.set_error("engine: " + error);
      return out;
    }
    stamp();  // args
    std::vector<at::Tensor> outputs;
    bool subclass = false, no_gpu = false;
    const uint64_t before = Launches();
    cudaEvent_t start = nullptr, end = nullptr;
    const bool device_sample = target_.cuda && call.device_preroll_ms() > 0;
    // Not a device-clock sample: CUPTI off (a traced correctness trial, for the own-kernels
    // rule, may have started it; the call clock's phase comes before the device clock's).
    if (!device_sample && device_clock_) device_clock_.reset();
    if (target_.cuda && call.timed() && !device_sample) {
      cudaEventCreate(&start);
      cudaEventCreate(&end);
      cudaEventRecord(start, nullptr);
    }
    auto t0 = Clock::now();
    if (device_sample) {
      DeviceSample(call.device_preroll_ms(), &out,
                   [&] { error = Forward(args, in, &outputs, &subclass, &no_gpu); });
    } else {
      error = Forward(args, in, &outputs, &subclass, &no_gpu);
    }
    if (end) cudaEventRecord(end, nullptr);
    stamp();  // forward
    out.set_own_launches(Launches() - before);
    if (error.empty() && target_.cuda) {
      cudaError_t e = cudaDeviceSynchronize();  // a kernel fault surfaces here
      if (e != cudaSuccess) error = std::string("CUDA error after the candidate ran: ") + cudaGetErrorString(e);
    }
    stamp();  // sync
    if (call.timed()) {
      out.mutable_claim()->set_host_ms(Since(t0) * 1000);
      float ms = 0;
      if (end && cudaEventElapsedTime(&ms, start, end) == cudaSuccess) {
        out.mutable_claim()->set_event_ms(ms);
      }
    }
    if (start) cudaEventDestroy(start);
    if (end) cudaEventDestroy(end);
    if (!error.empty()) {
      if (error[0] == '!') {
        out.set_mismatch(Bounded(error.substr(1)));
      } else {
        out.set_error(Bounded(error));
        out.set_no_gpu(no_gpu);
      }
      return out;
    }
    if (auto v = Rules(call, outputs, in, subclass, args)) {
      out.set_rule(v->rule);
      out.set_rule_reason(Bounded(v->reason));
      return out;
    }
    stamp();  // rules
    if (outputs.size() != static_cast<size_t>(call.outputs_size())) {
      out.set_mismatch("returned " + std::to_string(outputs.size()) + " outputs, the reference " +
                       std::to_string(call.outputs_size()));
      return out;
    }
    for (int k = 0; k < call.outputs_size(); ++k) {
      at::Tensor slot = slots_->View(call.outputs(k), &error);
      if (!slot.defined()) {
        out.set_error("engine: " + error);
        return out;
      }
      const at::Tensor& o = outputs[k];
      if (o.scalar_type() != slot.scalar_type() || o.sizes() != slot.sizes()) {
        std::ostringstream m;
        m << "output " << k << " is " << o.scalar_type() << " of shape " << o.sizes()
          << ", the reference's " << slot.scalar_type() << " of shape " << slot.sizes();
        out.set_mismatch(m.str());
        return out;
      }
      if (o.device() != slot.device()) {
        out.set_mismatch("output " + std::to_string(k) + " is on " + o.device().str() +
                         ", the reference's on " + slot.device().str());
        return out;
      }
      slot.copy_(o);
    }
    stamp();  // copy
    if (target_.cuda) {
      cudaError_t e = cudaDeviceSynchronize();
      if (e != cudaSuccess) out.set_error(std::string("CUDA error: ") + cudaGetErrorString(e));
    }
    stamp();  // sync2
    // Held for the next calls, so a fresh allocation can never land on the same memory.
    if (call.keep_outputs() > 0) held_.push_back(outputs);
    while (held_.size() > call.keep_outputs()) held_.pop_front();
    return out;
  }

  // Runs `forward` as a device-clock sample (timing.h, DeviceClock): its span, or why there
  // is none, in `out`'s claim, and whether it launched a kernel the candidate defines. A CUDA
  // fault while sampling surfaces in the device synchronisation after forward.
  void DeviceSample(double preroll_ms, judge::Called* out, const std::function<void()>& forward) {
    judge::Claim* claim = out->mutable_claim();
    if (!device_clock_ && device_clock_error_.empty()) {
      cudaDeviceProp p;
      cudaGetDeviceProperties(&p, target_.index);
      device_clock_ = DeviceClock::Start(target_.index, p.l2CacheSize, &device_clock_error_);
      if (!device_clock_ && device_clock_error_.empty()) device_clock_error_ = "unavailable";
    }
    if (!device_clock_) {
      forward();
      claim->set_no_span("the device clock cannot run in the candidate process: " +
                         device_clock_error_);
      return;
    }
    bool ran = false;
    // An exception out of the forward itself is the call's, not the sample's: it leaves this
    // function as it would from an unsampled call (the process answers `failed`).
    std::exception_ptr forward_error;
    try {
      DeviceClock::Reading r = device_clock_->Sample(
          [&] {
            ran = true;
            try {
              forward();
            } catch (...) {
              forward_error = std::current_exception();
            }
          },
          preroll_ms);
      claim->set_found(r.ok);
      claim->set_span_ms(r.span_ms);
      claim->set_busy_ms(r.busy_ms);
      claim->set_work_ms(r.work_ms);
      claim->set_queued(r.queued);
      claim->set_late_host_ms(r.late_host_ms);
      claim->set_launch_ms(r.launch_ms);
      claim->set_no_span(Bounded(r.why_not));
      // Only a candidate that built kernels of its own must launch them (own_kernels.h,
      // MustLaunchOwnKernels). The engine asks for these samples in the correctness trials
      // too, where native code does not stop them (engine.cc, Trial).
      const ExtensionBuilds& builds = ExtensionBuildsSoFar();
      if (r.ok &&
          MustLaunchOwnKernels(defined_kernels_.size(), builds.built, builds.kernel_library)) {
        CheckOwnKernels(r.kernels, out);
      }
    } catch (const std::exception& e) {
      claim->set_no_span(Bounded(e.what()));
      // The sample failed before the call (its pre-roll could not hold the GPU, under
      // contention): the call is still made, unsampled, so its outputs are there to check.
      if (!ran) forward();
    }
    if (forward_error) std::rethrow_exception(forward_error);
  }

  // Whether a call that launched `kernels` launched one the candidate defines (the `fallback`
  // rule's input, runtime_rules.h, UnlaunchedKernels).
  void CheckOwnKernels(const std::vector<std::string>& kernels, judge::Called* out) const {
    constexpr size_t kNames = 4, kNameChars = 160;
    out->set_kernels_checked(true);
    out->set_own_kernel(LaunchedOwnKernel(kernels, defined_kernels_));
    if (out->own_kernel()) return;
    for (size_t i = 0; i < kernels.size() && i < kNames; ++i) {
      out->add_launched_kernels(kernels[i].substr(0, kNameChars));
    }
  }

  // A failed extension build the candidate went on without (runtime_rules.h, FailedBuild),
  // where the counterfactual says it would have used the kernel (build_failures.h): at the
  // build (`args` null) when ModelNew's construction touches the stand-in, else at the first
  // call after the failure, with a clone of that call's arguments. A probe that touched
  // nothing clears those failures (the kernel is dead for this task); a later failure probes
  // again.
  std::optional<Verdict> BuildFallback(const std::string& where, const py::list* args) {
    const ExtensionBuilds& b = ExtensionBuildsSoFar();
    std::optional<Verdict> v = FailedBuild(b.failed, b.built, b.first_failure, where);
    if (!v || b.failed <= dead_failures_) {
      if (args) probe_model_ = py::object();  // the build's probe model is not needed
      return std::nullopt;
    }
    std::vector<int> devices;
    if (target_.cuda) devices.push_back(target_.index);
    const bool used = ProbeFailedBuildsUsed(
        [&] {
          // The build's probe model is kept for the first call's probe (constructed once).
          py::object m = std::move(probe_model_);
          if (!m || !args) {
            py::object mod = ExecModule("kforge_candidate_probe", source_);
            SeedAll(init_seed_);
            m = mod.attr("ModelNew")(*init_inputs_).attr("to")(target_.name());
          }
          if (!args) {
            probe_model_ = m;
            return;
          }
          py::list copies;
          for (py::handle a : *args) {
            copies.append(THPVariable_Check(a.ptr())
                              ? py::reinterpret_steal<py::object>(
                                    THPVariable_Wrap(THPVariable_Unpack(a.ptr()).clone()))
                              : py::reinterpret_borrow<py::object>(a));
          }
          at::NoGradGuard no_grad;
          m(*copies);
          if (target_.cuda) cudaDeviceSynchronize();
        },
        devices);
    py::module_::import("sys").attr("modules").attr("pop")("kforge_candidate_probe", py::none());
    if (args) probe_model_ = py::object();
    if (used) return v;
    if (args) dead_failures_ = b.failed;
    return std::nullopt;
  }

  std::optional<Verdict> Rules(const judge::Call& call, const std::vector<at::Tensor>& outputs,
                               const std::vector<at::Tensor>& in, bool subclass,
                               const py::list& args) {
    const std::string where =
        call.timed() ? "in iteration " + std::to_string(call.iteration()) + " of the timing stage, "
                     : "";
    if (subclass) {
      return Verdict{v1::VERDICT_REJECTED,
                     "lazy_tensor: the candidate returned a torch.Tensor subclass; outputs must "
                     "be plain tensors computed in forward",
                     "lazy_tensor"};
    }
    std::vector<bool> aliases;
    for (int o = 0; o < call.ref_aliases_size(); ++o) {
      for (size_t i = 0; i < in.size(); ++i) aliases.push_back((call.ref_aliases(o) >> i) & 1);
    }
    for (size_t o = 0; o < outputs.size(); ++o) {
      if (outputs[o].is_cuda()) {
        if (auto v = HostMemory(outputs[o], o, where)) return v;
      }
      for (const auto& earlier : held_) {  // empty unless the judge rotates input sets
        if (auto v = ReusedOutput(outputs[o], o, earlier, where)) return v;
      }
    }
    if (auto v = ReturnsInput(aliases, in.size(), outputs, in, where)) return v;
    if (auto v = BuildFallback(where, &args)) return v;
    if (strict_ && SwitchSnapshot() != switches_) {
      return Verdict{v1::VERDICT_REJECTED,
                     "global_switch: the candidate changed process-wide torch settings while "
                     "running",
                     "global_switch"};
    }
    return std::nullopt;
  }

  Channel channel_;
  Target target_;
  v1::Dialect dialect_ = v1::DIALECT_UNSPECIFIED;
  bool loaded_ = false, strict_ = true;
  bool calibrating_ = false;  // serving the judge's null calls (no candidate code has run)
  std::string switches_;
  std::unique_ptr<SlotMap> slots_;
  py::object candidate_, model_;
  // For the failed-build probe (BuildFallback): the source, the init seed and inputs ModelNew
  // was made with, and how many failed builds a probe already found dead.
  std::string source_;
  std::vector<std::string> defined_kernels_;  // the kernels its text defines (own_kernels.h)
  uint64_t init_seed_ = 0;
  py::list init_inputs_;
  uint32_t dead_failures_ = 0;
  py::object probe_model_;  // the build's probe ModelNew, for the first call's probe
  std::unique_ptr<CppCandidate> cpp_;
  std::deque<std::vector<at::Tensor>> held_;  // earlier calls' outputs
  std::unique_ptr<DeviceClock> device_clock_;  // on the first device-clock sample
  std::string device_clock_error_;             // why it could not start
};

}  // namespace

void RunCandidateProcess(int channel_fd, int taint_fd) {
  std::string error;
  if (!LockDownCandidateProcess(channel_fd, taint_fd, &error)) {
    std::fprintf(stderr, "kforge: the candidate process could not lock itself down: %s\n",
                 error.c_str());
    _exit(3);
  }
  CandidateProcess(3).Serve();
}

}  // namespace kforge::eval
