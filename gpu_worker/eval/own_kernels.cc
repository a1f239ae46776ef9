#include "gpu_worker/eval/own_kernels.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "gpu_worker/eval/cpp_imports.h"

namespace kforge::eval {
namespace {

bool IdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool Keyword(const std::string& s) {
  static const char* const kWords[] = {"void",         "static",    "inline",     "extern",
                                       "const",        "__host__",  "__device__", "__forceinline__",
                                       "__noinline__", "template",  "typename",   "class",
                                       "unsigned",     "int",       "float",      "double",
                                       "auto",         "__inline__"};
  return std::any_of(std::begin(kWords), std::end(kWords), [&](const char* w) { return s == w; });
}

void Add(std::vector<std::string>* names, const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) || Keyword(name)) return;
  if (std::find(names->begin(), names->end(), name) == names->end()) names->push_back(name);
}

// The function after the `__global__` that ends at `at`: the identifier before the first
// parenthesis, skipping attribute groups (`__launch_bounds__(256)`); "" when something other
// than a declaration's tokens comes first (a macro's `##`, a quote, a brace).
std::string GlobalFunctionAt(const std::string& s, size_t at) {
  constexpr size_t kMaxScan = 400;
  std::string last;
  for (size_t i = at; i < s.size() && i < at + kMaxScan;) {
    const char c = s[i];
    if (IdentChar(c)) {
      size_t j = i;
      while (j < s.size() && IdentChar(s[j])) ++j;
      std::string ident = s.substr(i, j - i);
      i = j;
      if (ident == "__launch_bounds__" || ident == "__attribute__" || ident == "__declspec" ||
          ident == "__cluster_dims__") {
        while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
        if (i < s.size() && s[i] == '(') {
          int depth = 0;
          for (; i < s.size() && i < at + kMaxScan; ++i) {
            if (s[i] == '(') ++depth;
            if (s[i] == ')' && --depth == 0) {
              ++i;
              break;
            }
          }
        }
        continue;
      }
      last = ident;
    } else if (c == '(') {
      return last;
    } else if (std::isspace(static_cast<unsigned char>(c)) || c == ':' || c == '<' || c == '>' ||
               c == '*' || c == '&' || c == ',') {
      ++i;
    } else {
      return "";
    }
  }
  return "";
}

// Whether position `at` is in a comment (`//` earlier on its line, an open `/*`), or on a line
// that starts with `#` (a preprocessor directive such as a macro's definition, whose parameter
// is no kernel's name, or a Python comment).
bool InCommentOrDirective(const std::string& s, size_t at) {
  const size_t line = s.rfind('\n', at);
  const size_t from = line == std::string::npos ? 0 : line + 1;
  const std::string before = s.substr(from, at - from);
  const size_t first = before.find_first_not_of(" \t");
  if (first != std::string::npos && before[first] == '#') return true;
  if (before.find("//") != std::string::npos) return true;
  const size_t open = s.rfind("/*", at);
  return open != std::string::npos &&
         (s.rfind("*/", at) == std::string::npos || s.rfind("*/", at) < open);
}

// `line` without leading whitespace.
std::string Stripped(const std::string& line) {
  size_t i = 0;
  while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
  return line.substr(i);
}

// A decorator that makes a GPU kernel of the function below it.
bool KernelDecorator(const std::string& line) {
  if (line.rfind("@", 0) != 0) return false;
  if (line.find("triton.jit") != std::string::npos ||
      line.find("triton.autotune") != std::string::npos ||
      line.find("triton.heuristics") != std::string::npos) {
    return true;
  }
  size_t at = line.find("cuda.jit");
  // numba's `cuda.jit` (`@cuda.jit`, `@numba.cuda.jit(...)`), not torch's `jit.script`.
  return at != std::string::npos && (at == 1 || !IdentChar(line[at - 1]));
}

}  // namespace

std::vector<std::string> DefinedKernelNames(const std::string& source) {
  std::vector<std::string> names;
  static const std::string kGlobal = "__global__";
  for (size_t at = source.find(kGlobal); at != std::string::npos;
       at = source.find(kGlobal, at + kGlobal.size())) {
    const size_t end = at + kGlobal.size();
    if ((at > 0 && IdentChar(source[at - 1])) || (end < source.size() && IdentChar(source[end])) ||
        InCommentOrDirective(source, at)) {
      continue;
    }
    Add(&names, GlobalFunctionAt(source, end));
  }
  std::istringstream lines(source);
  std::string line;
  bool decorated = false;
  while (std::getline(lines, line)) {
    const std::string s = Stripped(line);
    if (KernelDecorator(s)) {
      decorated = true;
    } else if (decorated && (s.rfind("def ", 0) == 0 || s.rfind("class ", 0) == 0)) {
      if (s[0] == 'd') {
        size_t i = 4;
        while (i < s.size() && s[i] == ' ') ++i;
        size_t j = i;
        while (j < s.size() && IdentChar(s[j])) ++j;
        if (j < s.size() && s[j] == '(') Add(&names, s.substr(i, j - i));
      }
      decorated = false;
    }
  }
  return names;
}

bool IsOwnKernel(const std::string& launched, const std::string& defined) {
  if (defined.empty()) return false;
  if (launched == defined) return true;
  // Triton before 3.0 named a kernel after its function and its arguments' specialisation
  // (`add_kernel_0d1d2d3de`).
  if (launched.size() > defined.size() + 1 && launched.compare(0, defined.size(), defined) == 0 &&
      launched[defined.size()] == '_') {
    const std::string rest = launched.substr(defined.size() + 1);
    if (std::all_of(rest.begin(), rest.end(),
                    [](char c) {
                      return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'z');
                    }) &&
        std::any_of(rest.begin(), rest.end(),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      return true;
    }
  }
  // A C++ name (demangled here when mangled): the name as a whole identifier before its
  // parameter list, template arguments or ABI tag (`(anonymous namespace)::relu_kernel(float*)`,
  // `my::tiled_gemm<256>(float const*)`, numba's `__main__::scale[abi:v1](Array<...>)`).
  const std::string name = Demangle(launched);
  for (size_t at = name.find(defined); at != std::string::npos; at = name.find(defined, at + 1)) {
    const size_t end = at + defined.size();
    if ((at == 0 || !IdentChar(name[at - 1])) && end < name.size() &&
        (name[end] == '(' || name[end] == '<' || name[end] == '[')) {
      return true;
    }
  }
  return false;
}

bool LaunchedOwnKernel(const std::vector<std::string>& launched,
                       const std::vector<std::string>& defined) {
  for (const std::string& l : launched) {
    for (const std::string& d : defined) {
      if (IsOwnKernel(l, d)) return true;
    }
  }
  return false;
}

bool MustLaunchOwnKernels(size_t defined_kernels, uint32_t extensions_built,
                          bool kernel_library_loaded) {
  return defined_kernels > 0 && (extensions_built > 0 || kernel_library_loaded);
}

}  // namespace kforge::eval
