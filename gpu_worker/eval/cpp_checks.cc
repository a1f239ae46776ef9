// Static rules for `cpp` candidates (see static_checks.h). The candidate is native code loaded
// into the engine's evaluation process, so its host code is held to a short list of what a
// forward needs: ATen/LibTorch, the standard containers and math, and kforge::Context.
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include "gpu_worker/eval/static_checks.h"

namespace kforge::eval {
namespace {

struct CppRule {
  const char* id;
  const char* what;
  std::regex pattern;
};

// Headers a candidate may include; anything else (threads, files, sockets, dlfcn, CUDA's own
// runtime and stream headers, ...) is refused before compiling.
const std::set<std::string>& AllowedIncludes() {
  static const auto* allowed = new std::set<std::string>{
      "kforge/candidate.h", "ATen/ATen.h", "torch/torch.h", "algorithm", "array", "cmath",
      "cstddef", "cstdint", "cstring", "functional", "initializer_list", "limits", "map",
      "memory", "numeric", "optional", "string", "tuple", "type_traits", "unordered_map",
      "utility", "vector"};
  return *allowed;
}

const std::vector<CppRule>& HostRules() {
  static const auto* rules = new std::vector<CppRule>{
      {"forbidden_call", "starts threads or processes",
       std::regex(R"(\bstd\s*::\s*(thread|jthread|async)\b|\bpthread_\w+|(?:^|[^\w.:]|[^\w]::)(fork|vfork|clone|clone3|posix_spawnp?|exec[lv]p?e?|system|popen|daemon|kill|raise)\s*\()")},
      {"forbidden_call", "loads code or calls the system directly",
       std::regex(R"((?:^|[^\w.:]|[^\w]::)(dlopen|dlsym|dlmopen|syscall|ptrace|mmap|mprotect|prctl|setrlimit|signal|sigaction|atexit|exit|_exit|quick_exit|abort)\s*\()")},
      {"forbidden_call", "calls the profiling interface the timer's activity clock uses",
       std::regex(R"(\b(cupti\w*|CUpti_\w*|nvtx\w*|kineto\w*)\b|\b(cu|cuda)(LaunchHostFunc|StreamAddCallback)\b)")},
      {"forbidden_call", "reads the caching allocator's map of every block (memory that is not "
                         "the candidate's)",
       std::regex(R"(\bCUDACachingAllocator\b)")},
      {"forbidden_call", "uses inline assembly in host code",
       std::regex(R"(\b(asm|__asm__|__asm)\b)")},
      {"forbidden_call", "reads or writes files, the environment or the network",
       std::regex(R"((?:^|[^\w.:]|[^\w]::)(fopen|freopen|fdopen|open|openat|creat|unlink|remove|rename|mkdir|getenv|setenv|putenv|socket|connect|bind|listen|accept|sendto|recvfrom)\s*\(|\b(at|torch)\s*::\s*(save|load)\s*\(|\b(FILE|ifstream|ofstream|fstream|filebuf)\b|std\s*::\s*filesystem\b|\bstd\s*::\s*(cout|cerr|clog)\b)")},
      {"forbidden_call", "launches or synchronises outside ctx.launch (the launch counter and the "
                         "timed stream would not see it)",
       std::regex(R"(\b(cudaLaunch\w*|cuLaunch\w*|cudaMemcpy\w*|cuMemcpy\w*|cudaMalloc\w*|cuMemAlloc\w*|cudaDeviceSetLimit|cudaSetDevice|cuCtx\w+)\b)")},
      {"side_stream", "creates or switches CUDA streams or graphs (work the timer would not see)",
       std::regex(R"(\b(getStreamFromPool|getStreamFromExternal|setCurrentCUDAStream|CUDAStreamGuard|OptionalCUDAStreamGuard|CUDAMultiStreamGuard|CUDAStream|cudaStreamCreate\w*|cuStreamCreate\w*|cudaStreamBeginCapture\w*|cudaGraph\w*|cuGraph\w*|CUDAGraph|cudaEventRecord\w*)\b|c10\s*::\s*Stream\b|at\s*::\s*cuda\s*::)")},
      {"global_switch", "changes a process-wide torch switch",
       std::regex(R"(globalContext\s*\(\s*\)\s*\.\s*set\w*|\bset_num_threads\b|\bset_num_interop_threads\b|\bset_default_dtype\b|\bsetAllowTF32\w*|\bsetFloat32MatmulPrecision\b|\bsetDeterministic\w*|\bsetBenchmarkCuDNN\b|\bsetUserEnabledCuDNN\b)")},
      {"try_except", "catches exceptions (a fallback can hide a failed kernel)",
       std::regex(R"(\btry\s*\{|\bcatch\s*\()")},
  };
  return *rules;
}

// Comments, string and character literals (raw strings included: the kernels) replaced by
// spaces, newlines kept, so the host rules never match kernel text or messages.
std::string HostCode(const std::string& src) {
  std::string out = src;
  size_t i = 0;
  auto blank = [&](size_t from, size_t to) {
    for (size_t j = from; j < to && j < out.size(); ++j) {
      if (out[j] != '\n') out[j] = ' ';
    }
  };
  while (i < out.size()) {
    if (out.compare(i, 2, "//") == 0) {
      size_t end = out.find('\n', i);
      if (end == std::string::npos) end = out.size();
      blank(i, end);
      i = end;
    } else if (out.compare(i, 2, "/*") == 0) {
      size_t end = out.find("*/", i + 2);
      end = end == std::string::npos ? out.size() : end + 2;
      blank(i, end);
      i = end;
    } else if (out.compare(i, 2, "R\"") == 0) {
      size_t paren = out.find('(', i + 2);
      if (paren == std::string::npos) break;
      std::string close = ")" + out.substr(i + 2, paren - i - 2) + "\"";
      size_t end = out.find(close, paren);
      end = end == std::string::npos ? out.size() : end + close.size();
      blank(i + 1, end);
      i = end;
    } else if (out[i] == '"' || out[i] == '\'') {
      char q = out[i];
      size_t j = i + 1;
      while (j < out.size() && out[j] != q && out[j] != '\n') j += out[j] == '\\' ? 2 : 1;
      blank(i + 1, j);
      i = j + 1;
    } else {
      ++i;
    }
  }
  return out;
}

// "LayerNorm" -> "layer_norm", "ReLU" -> "relu", "ConvTranspose2d" -> "conv_transpose2d".
std::string SnakeCase(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool upper = c >= 'A' && c <= 'Z';
    if (upper && i > 0 && name[i - 1] >= 'a' && name[i - 1] <= 'z' && i + 1 < name.size() &&
        name[i + 1] >= 'a' && name[i + 1] <= 'z') {
      out += '_';
    }
    out += upper ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return out;
}

// The compute ops the task's forward calls (torch.X, F.X, tensor methods, nn modules built in
// __init__), without shape and conversion methods. Empty when there is no forward.
std::set<std::string> TaskOps(const std::string& task) {
  static const std::set<std::string> kShapeOnly = {
      "view", "reshape", "size", "contiguous", "to", "float", "half", "double", "flatten",
      "permute", "transpose", "unsqueeze", "squeeze", "expand", "clone", "dim", "cuda", "cpu",
      "item", "numel", "detach", "type", "forward", "__init__", "super", "tensor"};
  std::map<std::string, std::string> modules;  // self.attr -> op
  std::regex module_def(R"(self\.(\w+)\s*=\s*(?:torch\.)?nn\.(\w+)\s*\()");
  for (std::sregex_iterator it(task.begin(), task.end(), module_def), end; it != end; ++it) {
    modules[(*it)[1]] = SnakeCase((*it)[2]);
  }
  size_t at = task.find("def forward");
  if (at == std::string::npos) return {};
  size_t stop = task.find("\ndef ", at);  // the module-level get_inputs
  std::string body = task.substr(at, stop == std::string::npos ? std::string::npos : stop - at);
  std::set<std::string> ops;
  std::regex call(R"((?:torch\.nn\.functional\.|torch\.|F\.|\.)(\w+)\s*\()");
  for (std::sregex_iterator it(body.begin(), body.end(), call), end; it != end; ++it) {
    std::string name = (*it)[1];
    auto m = modules.find(name);
    std::string op = m != modules.end() ? m->second : name;
    if (!kShapeOnly.count(op)) ops.insert(op);
  }
  return ops;
}

}  // namespace

RuleViolation CheckCppSource(const std::string& source, const std::string& task_source) {
  std::string host = HostCode(source);
  std::istringstream lines(host);
  std::string line;
  int n = 0;
  std::regex include(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  while (std::getline(lines, line)) {
    ++n;
    std::smatch m;
    // The include's name sits in a blanked string literal when quoted: read the original.
    std::string original = SourceLine(source, n);
    if (std::regex_search(original, m, include) && !AllowedIncludes().count(m[1])) {
      return RuleAt("forbidden_include",
                  "includes a header outside the candidate contract (kforge/candidate.h, ATen, "
                  "torch and the standard containers and math)",
                  source, n);
    }
    for (const CppRule& r : HostRules()) {
      if (std::regex_search(line, r.pattern)) return RuleAt(r.id, r.what, source, n);
    }
  }
  // The fallback rule: a candidate with kernels for a single-op task must not call that op's
  // torch implementation (the runtime rule only sees that some kernel of its own launched).
  if (source.find("KFORGE_KERNELS") == std::string::npos) return {};
  std::set<std::string> ops = TaskOps(task_source);
  if (ops.size() != 1) return {};
  const std::string& op = *ops.begin();
  std::regex torch_call("(\\b(at|torch)\\s*::\\s*(\\w+\\s*::\\s*)*|\\.\\s*)" + op + "_?\\s*\\(");
  std::istringstream again(host);
  n = 0;
  while (std::getline(again, line)) {
    ++n;
    if (std::regex_search(line, torch_call)) {
      return RuleAt("fallback",
                  "calls torch's own " + op +
                      ", the operation its kernels are meant to replace",
                  source, n);
    }
  }
  return {};
}

}  // namespace kforge::eval
