#include "gpu_worker/eval/static_checks.h"

#include "common/dialect.h"

#include <regex>
#include <sstream>
#include <vector>

namespace kforge::eval {
namespace {

struct Rule {
  const char* id;
  const char* what;
  std::regex pattern;
};

const std::vector<Rule>& PythonRules() {
  static const auto* rules = new std::vector<Rule>{
      {"global_switch", "changes a process-wide torch switch",
       std::regex(R"(torch\.backends\.\w+(\.\w+)*\s*=[^=]|set_float32_matmul_precision|use_deterministic_algorithms|set_flush_denormal|set_default_dtype|set_num_threads|allow_tf32\s*=|allow_fp16_reduced|allow_bf16_reduced)")},
      {"forbidden_import", "imports a module that reaches into the process or the system",
       std::regex(R"(^\s*(import|from)\s+(ctypes|gc|inspect|os|sys|subprocess|socket|threading|multiprocessing|signal|importlib|builtins|pickle|shutil|pathlib|io|resource|mmap|_thread|posix|cffi)\b)")},
      {"forbidden_import", "imports a module that reaches into the process or the system",
       std::regex(R"(^\s*import\s+.*,\s*(ctypes|gc|inspect|os|sys|subprocess|socket|threading|multiprocessing|importlib|builtins|concurrent|asyncio)\b)")},
      {"forbidden_import", "starts processes, threads or tasks outside the timed call",
       std::regex(R"(^\s*(import|from)\s+(concurrent|asyncio)\b|\btorch\.(multiprocessing|distributed)\b|^\s*from\s+torch\s+import\s+.*\b(multiprocessing|distributed)\b)")},
      {"forbidden_call", "uses a dynamic-import or code-execution builtin",
       std::regex(R"((^|[^.\w])(__import__|eval|exec|compile|open|globals|vars|breakpoint)\s*\()")},
      {"forbidden_call", "reaches into interpreter internals",
       std::regex(R"(__(globals|subclasses|builtins|code|closure|dict|class|bases|mro|getattribute|setattr)__)")},
      {"forbidden_call", "patches a torch, time or numpy attribute",
       std::regex(R"(^\s*(torch|time|np|numpy|math|F|nn)(\.\w+)+\s*(=[^=]|\+=|-=))")},
      {"forbidden_call", "patches a torch, time or numpy attribute",
       std::regex(R"(setattr\s*\(\s*(torch|time|np|numpy|F|nn)\b)")},
      {"forbidden_call", "starts a profiler (it would take over the timer's activity trace)",
       std::regex(R"(profiler)", std::regex::icase)},  // CUPTI, kineto: kAnywhere below
      {"side_stream", "creates or switches CUDA streams (work the timer would not see)",
       std::regex(R"(cuda\.(Stream|stream|ExternalStream|set_stream)\b|torch\.Stream\b|cudaStreamCreate|\bStreamContext\b)")},
      {"try_except", "catches exceptions (a fallback can hide a failed kernel)",
       std::regex(R"(^\s*(try\s*:|except\b))")},
  };
  return *rules;
}

// Replaces the contents of triple-quoted strings (kernel sources) and comments with spaces, so
// that C++ text inside SRC = r'''...''' is not matched against Python rules. Line structure is
// preserved for line numbers.
std::string BlankStringsAndComments(const std::string& src) {
  std::string out = src;
  size_t i = 0;
  while (i < out.size()) {
    if (out.compare(i, 3, "'''") == 0 || out.compare(i, 3, "\"\"\"") == 0) {
      std::string quote = out.substr(i, 3);
      size_t end = out.find(quote, i + 3);
      if (end == std::string::npos) end = out.size();
      for (size_t j = i + 3; j < end; ++j) {
        if (out[j] != '\n') out[j] = ' ';
      }
      i = end + 3;
      continue;
    }
    if (out[i] == '#') {
      while (i < out.size() && out[i] != '\n') out[i++] = ' ';
      continue;
    }
    ++i;
  }
  return out;
}

}  // namespace

std::string SourceLine(const std::string& source, int n) {
  std::istringstream in(source);
  std::string line;
  for (int k = 0; k < n && std::getline(in, line); ++k) {
  }
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.erase(0, 1);
  return line.size() > 120 ? line.substr(0, 120) + "..." : line;
}

RuleViolation RuleAt(const std::string& rule, const std::string& what, const std::string& source,
                     int line) {
  return {rule, rule + ": line " + std::to_string(line) + " " + what + ": " +
                    SourceLine(source, line)};
}

RuleViolation CheckCandidateSource(const std::string& source, v1::Dialect dialect,
                                   const std::string& task_source) {
  if (dialect == v1::DIALECT_CPP) return CheckCppSource(source, task_source);
  // Over the whole text, strings included: C++ given to load_inline is not otherwise checked,
  // and a kernel has no use for the profiling interface, for host functions queued on a
  // stream (work the activity clock would not see), for threads (whose launches could land
  // in the reference's timed call) or for the caching allocator's map of every block (where
  // the reference's inputs and outputs lie).
  static const std::regex kAnywhere(
      R"(cupti|kineto|memory_snapshot|_record_memory_history|_dump_snapshot|CUDACachingAllocator|cudaLaunchHostFunc|cuLaunchHostFunc|cudaStreamAddCallback|cuStreamAddCallback|GraphAddHostNode|std\s*::\s*(thread|jthread|async)\b|pthread_create|at\s*::\s*launch\b|\bdl(open|sym|mopen)\b|RTLD_|GetDriverEntryPoint|GetProcAddress)",
      std::regex::icase);
  std::string code = BlankStringsAndComments(source);
  std::istringstream lines(code), raw_lines(source);
  std::string line, raw;
  int n = 0;
  while (std::getline(lines, line) && std::getline(raw_lines, raw)) {
    ++n;
    if (std::regex_search(raw, kAnywhere)) {
      return RuleAt("forbidden_call",
                    "uses the profiling interface, the allocator's block map, a host function on a "
                    "stream or a thread (work the timer would not see or would misplace, memory "
                    "that is not the candidate's)",
                    source, n);
    }
    for (const Rule& r : PythonRules()) {
      if (std::regex_search(line, r.pattern)) return RuleAt(r.id, r.what, source, n);
    }
  }
  if (!std::regex_search(code, std::regex(R"((^|\n)class\s+ModelNew\b)"))) {
    return {"missing_model", "missing_model: the candidate defines no class ModelNew"};
  }
  return {};
}

}  // namespace kforge::eval
