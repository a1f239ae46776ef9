#include "common/dialect.h"

#include <regex>

namespace kforge {

const char* DialectName(v1::Dialect d) {
  switch (d) {
    case v1::DIALECT_KERNELBENCH:
      return "kernelbench";
    case v1::DIALECT_NVRTC:
      return "nvrtc";
    case v1::DIALECT_CPP:
      return "cpp";
    default:
      return "unspecified";
  }
}

bool ParseDialect(const std::string& name, v1::Dialect* out) {
  for (v1::Dialect d : {v1::DIALECT_KERNELBENCH, v1::DIALECT_NVRTC, v1::DIALECT_CPP}) {
    if (name == DialectName(d)) {
      *out = d;
      return true;
    }
  }
  return false;
}

v1::Dialect InferDialect(const std::string& source) {
  static const std::regex marker(R"(kforge:\s*dialect\s*=\s*(\w+))");
  std::smatch m;
  std::string head = source.substr(0, 2000);
  if (std::regex_search(head, m, marker)) {
    v1::Dialect d;
    if (ParseDialect(m[1].str(), &d)) return d;
  }
  if (source.find("load_inline") != std::string::npos) return v1::DIALECT_KERNELBENCH;
  if (source.find("kforge.cuda") != std::string::npos ||
      source.find("from kforge import cuda") != std::string::npos) {
    return v1::DIALECT_NVRTC;
  }
  if (source.find("#include") != std::string::npos &&
      source.find("class ModelNew") == std::string::npos) {
    return v1::DIALECT_CPP;
  }
  return v1::DIALECT_KERNELBENCH;
}

}  // namespace kforge
