#include "gpu_worker/eval/cpp_dialect.h"

#include "common/base/files.h"
#include "gpu_worker/eval/cpp_imports.h"
#include "gpu_worker/eval/cuda_driver.h"
#include "gpu_worker/eval/kernel_args.h"

#include <ATen/core/grad_mode.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/base/sha256.h"
#include "common/base/subprocess.h"
#include "gpu_worker/eval/nvrtc_compile.h"

#define KFORGE_CANDIDATE_ENGINE_SIDE
#include "kforge/candidate.h"

namespace kforge::eval {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kSourceName = "candidate.cpp";
constexpr const char* kPchHeader = "kforge_pch.h";

CppBuildStats g_stats;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// POSIX rather than std::filesystem: libtorch.so exports its own, incompatible copy of
// std::filesystem's functions, which the dynamic linker may bind in the engine's process.
bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

std::string Bounded(std::string log, size_t max_bytes) {
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (log.size() > max_bytes) log = log.substr(0, max_bytes) + "\n[log truncated]";
  return log;
}

std::string CacheRoot(const std::string& configured, std::string* error) {
  std::string root = configured;
  if (root.empty()) {
    if (const char* home = std::getenv("HOME"); home && *home) {
      root = std::string(home) + "/.cache/kforge";
    } else {
      static const std::string temporary = [] {  // one per process: the PCH is reused
        const char* tmpdir = std::getenv("TMPDIR");
        std::string tmpl = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/kforge-cpp-XXXXXX";
        return mkdtemp(tmpl.data()) ? tmpl : std::string();
      }();
      if (temporary.empty()) {
        *error = "cannot create a temporary cache directory: " + std::string(strerror(errno));
        return "";
      }
      root = temporary;
    }
  }
  *error = MakeDirs(root + "/cpp");
  return root;
}

// Flags shared by the PCH and every compile (they must agree for the PCH to be used).
std::vector<std::string> CompileFlags(const CppToolchain& tc) {
  std::vector<std::string> flags = {"-O2", "-std=c++17", "-fPIC", "-D_GLIBCXX_USE_CXX11_ABI=1"};
  for (const auto& dir : tc.include_dirs) {
    flags.push_back("-isystem");
    flags.push_back(dir);
  }
  return flags;
}

// No -l flags: the shared object is linked without libtorch and libc10 and its undefined
// symbols are bound by dlopen to the copies the engine has loaded (linking against
// libtorch_cpu's symbol table cost 0.25 s of a 1.8 s build). A missing `forward` or an unknown
// symbol is then reported by dlopen (RTLD_NOW), with the symbol's name; CheckCandidateImports
// keeps the libraries it may bind to those the link allowed.
std::vector<std::string> LinkFlags() { return {"-shared"}; }

std::string CandidateHeader(const CppToolchain& tc) {
  for (const auto& dir : tc.include_dirs) {
    std::string text = ReadFileOrEmpty(dir + "/kforge/candidate.h");
    if (!text.empty()) return text;
  }
  return "";
}

std::string JoinArgs(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += (out.empty() ? "" : " ") + a;
  return out;
}

// One run of the host compiler; `log` gets its output.
SubprocessResult RunCompiler(const CppToolchain& tc, std::vector<std::string> args,
                             const std::string& cwd) {
  SpawnOptions o;
  o.argv = {tc.cxx};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  // ASCII diagnostics; and collect2 finds `ld` through PATH, which a sandbox may have cleared.
  o.env = {"LC_ALL=C"};
  if (const char* path = std::getenv("PATH"); !path || !*path) {
    o.env.push_back("PATH=/usr/local/bin:/usr/bin:/bin");
  }
  o.cwd = cwd;
  o.wall_limit_s = tc.compile_timeout_s;
  o.max_output_bytes = tc.max_log_bytes;
  return RunSubprocess(std::move(o));
}

std::string CompilerLog(const SubprocessResult& r, size_t max_bytes) {
  std::string log = r.stderr_data;
  if (!r.stdout_data.empty()) log += (log.empty() ? "" : "\n") + r.stdout_data;
  return Bounded(log, max_bytes);
}

// Builds <pch_dir>/kforge_pch.h.gch unless present (or when `rebuild`). Returns an error.
std::string EnsurePch(const CppToolchain& tc, const std::string& pch_dir, bool rebuild) {
  std::string header = pch_dir + "/" + kPchHeader;
  std::string gch = header + ".gch";
  if (!rebuild && Exists(gch)) return "";
  if (std::string e = MakeDirs(pch_dir); !e.empty()) return e;
  // One build at a time per directory: evaluations and builds ahead that start together on a
  // cold cache wait for the first instead of each compiling the same header (~20 s of CPU).
  // Bounded: anyone who can open the file can hold the lock (a candidate could, to stall
  // others), so after 120 s this build goes ahead on its own temporary name anyway.
  ScopedFd lock(open((pch_dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666));
  for (int waited_ms = 0;
       lock.fd >= 0 && flock(lock.fd, LOCK_EX | LOCK_NB) != 0 && waited_ms < 120000;
       waited_ms += 100) {
    usleep(100 * 1000);
  }  // released when the descriptor closes
  if (!rebuild && Exists(gch)) return "";  // built by the holder of the lock meanwhile
  if (!WriteFileAtomically(header, "#include <kforge/candidate.h>\n#include <ATen/ATen.h>\n")) {
    return "cannot write " + header;
  }
  std::string tmp = TempNameFor(gch);
  std::vector<std::string> args = CompileFlags(tc);
  for (const char* a : {"-x", "c++-header"}) args.push_back(a);
  args.insert(args.end(), {header, "-o", tmp});
  auto start = Clock::now();
  SubprocessResult r = RunCompiler(tc, args, pch_dir);
  ++g_stats.pch_builds;
  g_stats.pch_s += Since(start);
  if (!r.Succeeded() || std::rename(tmp.c_str(), gch.c_str()) != 0) {
    std::remove(tmp.c_str());
    return "building the precompiled header failed (" + r.Describe() + "): " + tc.cxx + " " +
           JoinArgs(args) + "\n" + CompilerLog(r, tc.max_log_bytes);
  }
  return "";
}

bool StalePch(const std::string& log) {
  return log.find("invalid-pch") != std::string::npos ||
         log.find("precompiled header") != std::string::npos;
}

// The NVRTC source: the kernels with a #line directive, so that NVRTC's messages carry line
// numbers of the candidate file.
std::string KernelsWithLineInfo(const std::string& file, const std::string& kernels) {
  size_t at = file.find(kernels);
  if (at == std::string::npos) return kernels;
  size_t line = 1;
  for (size_t i = 0; i < at; ++i) line += file[i] == '\n';
  return "#line " + std::to_string(line) + " \"" + kSourceName + "\"\n" + kernels;
}

std::vector<std::string> SplitOptions(const char* options) {
  std::vector<std::string> out;
  std::istringstream in(options ? options : "");
  for (std::string o; in >> o;) out.push_back(o);
  return out;
}

// The engine's side of kforge::Context: the candidate's NVRTC module and its launches.
class CppContext final : public kforge::Context {
 public:
  CppContext(const CppBuildConfig& config, std::string cubin)
      : gpu_(config.gpu_available),
        device_(config.device_index),
        arch_(config.arch),
        cubin_(std::move(cubin)) {}
  ~CppContext() override {
    if (module_) GetDriver().module_unload(module_);
  }

  // Loads the cubin on the GPU (GPU mode with kernels only). Throws on failure.
  void LoadModule() {
    cudaSetDevice(device_);
    CheckCu(GetDriver().module_load_data(&module_, cubin_.data()), "loading the kernels");
  }

  at::Device device() const override {
    return gpu_ ? at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device_)) : at::kCPU;
  }
  bool gpu_available() const override { return gpu_; }
  uint64_t launches() const { return launches_; }
  bool has_kernels() const { return !cubin_.empty(); }
  // Whether a launch was refused for lack of a GPU since the last call.
  bool TakeNoGpuAttempt() { return std::exchange(no_gpu_attempt_, false); }

 protected:
  void Launch(const char* name, const kforge::Dim3& grid, const kforge::Dim3& block,
              size_t shared_mem, const kforge::KernelArg* args, size_t num_args) override {
    std::string kernel = name ? name : "";
    if (!has_kernels()) {
      throw std::invalid_argument("kforge: ctx.launch(\"" + kernel +
                                  "\"): the candidate declares no KFORGE_KERNELS");
    }
    if (!gpu_) {
      no_gpu_attempt_ = true;
      throw std::runtime_error("kforge: no GPU (CPU mode): kernel " + kernel +
                               " was compiled for " + arch_ + " but cannot run");
    }
    Kernel& k = Find(kernel);
    if (num_args != k.param_sizes.size()) {
      throw std::invalid_argument("kforge: kernel " + kernel + " takes " +
                                  std::to_string(k.param_sizes.size()) + " arguments, " +
                                  std::to_string(num_args) + " given");
    }
    storage_.resize(num_args);
    params_.resize(num_args);
    for (size_t i = 0; i < num_args; ++i) {
      Pack(k, args[i], i, storage_[i].data());
      params_[i] = storage_[i].data();
    }
    if (shared_mem > 48 * 1024 && shared_mem > k.max_dynamic_shared) {
      CheckCu(GetDriver().func_set_attribute(k.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             static_cast<int>(shared_mem)),
              "setting the dynamic shared memory of " + kernel);
      k.max_dynamic_shared = shared_mem;
    }
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device_).stream();
    CheckCu(GetDriver().launch_kernel(k.fn, Extent(grid.x, "grid"), Extent(grid.y, "grid"),
                                      Extent(grid.z, "grid"), Extent(block.x, "block"),
                                      Extent(block.y, "block"), Extent(block.z, "block"),
                                      static_cast<unsigned>(shared_mem),
                                      reinterpret_cast<CUstream>(stream), params_.data(), nullptr),
            "launching " + kernel);
    ++launches_;
  }

 private:
  struct Kernel {
    std::string name;
    CUfunction fn;
    std::vector<size_t> param_sizes;
    size_t max_dynamic_shared = 48 * 1024;
  };

  static unsigned Extent(int64_t v, const char* what) {
    if (v < 1 || v > INT32_MAX) {
      throw std::invalid_argument(std::string("kforge: ") + what + " dimension " +
                                  std::to_string(v) + " is outside [1, 2^31)");
    }
    return static_cast<unsigned>(v);
  }

  // Candidates have a handful of kernels: a linear scan beats hashing the name.
  Kernel& Find(const std::string& name) {
    for (Kernel& k : kernels_) {
      if (k.name == name) return k;
    }
    Kernel k{name, nullptr, {}};
    if (GetDriver().module_get_function(&k.fn, module_, name.c_str()) != CUDA_SUCCESS) {
      throw std::invalid_argument("kforge: the kernels have no kernel named '" + name +
                                  "' (kernels must be extern \"C\")");
    }
    for (size_t i = 0;; ++i) {
      size_t offset = 0, size = 0;
      if (GetDriver().func_get_param_info(k.fn, i, &offset, &size) != CUDA_SUCCESS) break;
      k.param_sizes.push_back(size);
    }
    kernels_.push_back(std::move(k));
    return kernels_.back();
  }

  void Pack(const Kernel& k, const kforge::KernelArg& arg, size_t i, unsigned char* out) const {
    using Kind = kforge::KernelArg::Kind;
    size_t size = k.param_sizes[i];
    auto bad = [&](const std::string& why) {
      return std::invalid_argument("kforge: kernel " + k.name + " argument " + std::to_string(i) +
                                   ": " + why);
    };
    switch (arg.kind()) {
      case Kind::kTensor:
      case Kind::kPointer: {
        const void* p = arg.pointer();
        if (arg.kind() == Kind::kTensor && arg.tensor().defined()) {
          const at::Tensor& t = arg.tensor();
          if (!t.is_cuda() || t.get_device() != device_) {
            throw bad("the tensor is on " + t.device().str() + ", not on " + device().str());
          }
          p = t.data_ptr();
        }
        if (size != sizeof(void*)) throw bad("a pointer needs a pointer parameter");
        std::memcpy(out, &p, sizeof p);
        return;
      }
      case Kind::kBool:
        if (size != 1) throw bad("a bool needs a 1-byte parameter");
        out[0] = static_cast<unsigned char>(arg.integer());
        return;
      case Kind::kInt: {
        std::string why = PackInteger(arg.integer(), arg.unsigned_type(), size, out);
        if (!why.empty()) throw bad(why);
        return;
      }
      case Kind::kFloat: {
        std::string why = PackFloat(arg.floating(), size, out);
        if (!why.empty()) throw bad(why);
        return;
      }
    }
  }

  bool gpu_;
  int device_;
  std::string arch_;
  std::string cubin_;
  CUmodule module_ = nullptr;
  std::vector<Kernel> kernels_;
  std::vector<std::array<unsigned char, 16>> storage_;  // reused: no allocation per launch
  std::vector<void*> params_;
  uint64_t launches_ = 0;
  bool no_gpu_attempt_ = false;
};

}  // namespace

CppToolchain DefaultCppToolchain() {
  CppToolchain tc;
  tc.cxx = KFORGE_CPP_CXX;
  tc.include_dirs = {KFORGE_CANDIDATE_INCLUDE, KFORGE_TORCH_INCLUDE, KFORGE_TORCH_API_INCLUDE};
  tc.torch_version = KFORGE_TORCH_VERSION;
  return tc;
}

CppBuildStats GetCppBuildStats() { return g_stats; }

struct CppCandidate::Impl {
  using InitFn = bool (*)(kforge::Context*, const std::vector<at::Tensor>*, std::string*);
  using ForwardFn = bool (*)(kforge::Context*, const std::vector<at::Tensor>*,
                             std::vector<at::Tensor>*, std::string*);
  InitFn init = nullptr;
  ForwardFn forward = nullptr;
  bool has_init = false;
  std::unique_ptr<CppContext> context;

  // The entry points catch everything the candidate throws; this catch is for the engine's own
  // code between them (vector assignment, allocation).
  template <typename F>
  CppCallStatus Call(const char* what, F&& f) {
    CppCallStatus s;
    at::NoGradGuard no_grad;
    try {
      if (!f(&s.error) && s.error.empty()) s.error = std::string(what) + " failed";
    } catch (const c10::Error& e) {
      s.error = e.what_without_backtrace();
    } catch (const std::exception& e) {
      s.error = e.what();
    }
    s.no_gpu = context->TakeNoGpuAttempt();
    if (s.no_gpu && s.error.empty()) {
      s.error = "kforge: no GPU (CPU mode): the candidate's " + std::string(what) +
                " caught the error of a kernel launch that cannot run without a GPU";
    }
    return s;
  }
};

CppCandidate::CppCandidate(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CppCandidate::~CppCandidate() = default;

CppCallStatus CppCandidate::Init(const std::vector<at::Tensor>& params) {
  return impl_->Call("init", [&](std::string* error) {
    return impl_->init(impl_->context.get(), &params, error);
  });
}

CppCallStatus CppCandidate::Forward(const std::vector<at::Tensor>& inputs,
                                    std::vector<at::Tensor>* outputs) {
  return impl_->Call("forward", [&](std::string* error) {
    return impl_->forward(impl_->context.get(), &inputs, outputs, error);
  });
}

uint64_t CppCandidate::launches() const { return impl_->context->launches(); }
bool CppCandidate::has_kernels() const { return impl_->context->has_kernels(); }
bool CppCandidate::has_init() const { return impl_->has_init; }

namespace {

// Compiles `source` into <key_dir>/candidate.so unless it is cached. Fills r.log, and r.error
// and r.compile_error on failure.
bool CompileSharedObject(const std::string& source, const CppToolchain& tc,
                         const std::string& pch_dir, const std::string& key_dir,
                         CppBuildResult* r) {
  std::string so = key_dir + "/candidate.so";
  std::string log_path = key_dir + "/candidate.log";
  if (Exists(so)) {
    r->cache_hit = true;
    ++g_stats.cache_hits;
    r->log = ReadFileOrEmpty(log_path);
    return true;
  }
  if (!MakeDirs(key_dir).empty() || !WriteFileAtomically(key_dir + "/" + kSourceName, source)) {
    r->error = "cannot write the candidate's source under " + key_dir;
    return false;
  }
  std::string tmp = TempNameFor("candidate.so");
  std::vector<std::string> args = CompileFlags(tc);
  std::vector<std::string> rest = {
      "-include", pch_dir + "/" + kPchHeader, "-Werror=invalid-pch", kSourceName, "-o", tmp};
  args.insert(args.end(), rest.begin(), rest.end());
  for (const auto& f : LinkFlags()) args.push_back(f);
  SubprocessResult run;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (std::string e = EnsurePch(tc, pch_dir, attempt > 0); !e.empty()) {
      r->error = e;
      return false;
    }
    auto start = Clock::now();
    run = RunCompiler(tc, args, key_dir);
    ++g_stats.compiler_runs;
    g_stats.compile_s += Since(start);
    r->log = CompilerLog(run, tc.max_log_bytes);
    if (run.Succeeded() || run.timed_out || !StalePch(r->log)) break;
  }
  if (!run.Succeeded()) {
    std::remove((key_dir + "/" + tmp).c_str());
    r->compile_error = run.started;
    r->error = run.started ? "the candidate did not compile (" + run.Describe() + "):\n" + r->log
                           : "cannot run the host compiler " + tc.cxx + ": " + run.error;
    return false;
  }
  WriteFileAtomically(log_path, r->log);
  if (std::rename((key_dir + "/" + tmp).c_str(), so.c_str()) != 0) {
    r->error = "cannot move the shared object into " + so;
    return false;
  }
  return true;
}

// dlopen's message for a shared object that does not load, with the unresolved symbol
// demangled: an unknown function or a missing `forward` shows up here, not at link time.
std::string LoadError(const char* dl_error) {
  std::string error = std::string("the candidate's shared object did not load: ") +
                      (dl_error ? dl_error : "unknown error");
  const std::string marker = "undefined symbol: ";
  size_t at = error.find(marker);
  if (at == std::string::npos) return error;
  std::string mangled = error.substr(at + marker.size());
  std::string symbol = Demangle(mangled.substr(0, mangled.find_first_of(" ,\n")));
  error += "\n(undefined symbol " + symbol + ")";
  if (symbol.rfind("forward(kforge::Context&", 0) == 0) {
    error +=
        "\n(define std::vector<at::Tensor> forward(kforge::Context&, const "
        "std::vector<at::Tensor>&) at global scope)";
  }
  return error;
}

template <typename F>
F Symbol(void* handle, const char* name) {
  return reinterpret_cast<F>(dlsym(handle, name));
}

// The cache root, the toolchain's identity (compiler, flags, torch, candidate header) and the
// PCH directory it selects.
struct CppLayout {
  std::string root, toolchain_id, pch_dir;
};

// Fills `layout`; returns an error, empty on success.
std::string ResolveLayout(const CppBuildConfig& config, CppLayout* layout) {
  const CppToolchain& tc = config.toolchain;
  std::string error;
  layout->root = CacheRoot(config.cache_dir, &error);
  if (!error.empty()) return error;
  std::string header = CandidateHeader(tc);
  if (header.empty()) return "kforge/candidate.h is in none of the include directories";
  std::string flags = JoinArgs(CompileFlags(tc)) + "\n" + JoinArgs(LinkFlags());
  layout->toolchain_id = tc.cxx + "\n" + flags + "\ntorch " + tc.torch_version + "\n" + header;
  layout->pch_dir = layout->root + "/cpp/pch-" + Sha256Hex(layout->toolchain_id).substr(0, 16);
  return "";
}

}  // namespace

std::string PrepareCppPch(const CppBuildConfig& config) {
  CppLayout layout;
  if (std::string e = ResolveLayout(config, &layout); !e.empty()) return e;
  return EnsurePch(config.toolchain, layout.pch_dir, false);
}

CppBuildResult BuildCppCandidate(const std::string& source, const CppBuildConfig& config) {
  auto start = Clock::now();
  CppBuildResult r;
  auto done = [&]() -> CppBuildResult {
    r.seconds = Since(start);
    return std::move(r);
  };
  const CppToolchain& tc = config.toolchain;
  CppLayout layout;
  r.error = ResolveLayout(config, &layout);
  if (!r.error.empty()) return done();
  const std::string& root = layout.root;
  std::string objects = config.objects_dir.empty() ? root + "/cpp" : config.objects_dir;
  std::string key_dir = objects + "/" + Sha256Hex(source + "\n" + layout.toolchain_id);
  auto compile_start = Clock::now();
  bool compiled = CompileSharedObject(source, tc, layout.pch_dir, key_dir, &r);
  r.host_compile_s = Since(compile_start);
  if (!compiled) return done();

  std::string so = key_dir + "/candidate.so";
  auto load_start = Clock::now();
  if (std::string e = CheckCandidateImports(so); !e.empty()) {
    r.compile_error = true;
    r.error = e;
    return done();
  }
  void* handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle) {
    r.compile_error = true;
    r.error = LoadError(dlerror());
    return done();
  }
  auto impl = std::make_unique<CppCandidate::Impl>();
  auto abi = Symbol<int (*)()>(handle, "kforge_candidate_abi_version");
  auto has_init = Symbol<bool (*)()>(handle, "kforge_candidate_has_init");
  impl->init = Symbol<CppCandidate::Impl::InitFn>(handle, "kforge_candidate_init");
  impl->forward = Symbol<CppCandidate::Impl::ForwardFn>(handle, "kforge_candidate_forward");
  auto kernels = Symbol<const char* (*)()>(handle, "kforge_candidate_kernels");
  auto options = Symbol<const char* (*)()>(handle, "kforge_candidate_options");
  if (!abi || abi() != KFORGE_CANDIDATE_ABI_VERSION || !has_init || !impl->init || !impl->forward) {
    dlclose(handle);
    r.compile_error = true;
    r.error = "the candidate's shared object lacks the kforge entry points of ABI version " +
              std::to_string(KFORGE_CANDIDATE_ABI_VERSION) + " (include <kforge/candidate.h>)";
    return done();
  }
  impl->has_init = has_init();
  r.load_s = Since(load_start);

  std::string cubin;
  if (kernels) {
    NvrtcCompileRequest req;
    req.source = KernelsWithLineInfo(source, kernels());
    req.name = "candidate_kernels.cu";
    req.arch = config.arch;
    req.options = SplitOptions(options ? options() : nullptr);
    req.cache_dir = config.nvrtc_cache_dir.empty() ? root : config.nvrtc_cache_dir;
    auto nvrtc_start = Clock::now();
    NvrtcCompileOutput nv = CompileWithNvrtc(req);
    r.kernel_compile_s = Since(nvrtc_start);
    if (!nv.log.empty()) r.log += (r.log.empty() ? "" : "\n") + nv.log;
    if (!nv.ok) {
      r.compile_error = true;
      r.error = "the candidate's kernels did not compile (NVRTC, " + config.arch + "):\n" + nv.log;
      return done();
    }
    cubin = std::move(nv.cubin);
  }
  impl->context = std::make_unique<CppContext>(config, std::move(cubin));
  if (config.gpu_available && impl->context->has_kernels()) {
    auto module_start = Clock::now();
    try {
      impl->context->LoadModule();
    } catch (const std::exception& e) {
      r.error = e.what();
      return done();
    }
    r.load_s += Since(module_start);
  }
  r.candidate = std::make_unique<CppCandidate>(std::move(impl));
  return done();
}

}  // namespace kforge::eval
