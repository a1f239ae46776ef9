#include "common/base/files.h"

#include <cstdint>
#include <cstdio>
#include <random>
#include <fstream>
#include <sstream>

namespace kforge {

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TempNameFor(const std::string& path) {
  // Fresh entropy on every call: a generator's state would be copied into forked children.
  std::random_device rd;
  uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(v));
  return path + ".tmp." + hex;
}

bool WriteFileAtomically(const std::string& path, const std::string& data) {
  std::string tmp = TempNameFor(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) return false;
  }
  if (std::rename(tmp.c_str(), path.c_str()) == 0) return true;
  std::remove(tmp.c_str());
  return false;
}

}  // namespace kforge
