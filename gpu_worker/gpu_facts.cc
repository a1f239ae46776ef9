#include "gpu_worker/gpu_facts.h"

#include <sstream>
#include <vector>

#include "common/base/subprocess.h"

namespace kforge {

std::string GpuTypeFromName(const std::string& full) {
  std::string name = full;
  for (const char* prefix : {"NVIDIA ", "GeForce ", "Tesla "}) {
    if (name.rfind(prefix, 0) == 0) name = name.substr(std::string(prefix).size());
  }
  std::string out;
  for (char c : name) {
    if (c == '-' || (c == ' ' && out.rfind("RTX", 0) != 0)) break;
    if (c != ' ') out.push_back(c);
  }
  return out.empty() ? "gpu" : out;
}

GpuFacts ProbeGpus() {
  GpuFacts f;
  SpawnOptions o;
  o.argv = {"nvidia-smi", "--query-gpu=name,compute_cap,memory.total,driver_version",
            "--format=csv,noheader,nounits"};
  o.wall_limit_s = 20;
  SubprocessResult r = RunSubprocess(o);
  if (!r.Succeeded()) return f;
  std::istringstream lines(r.stdout_data);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    std::vector<std::string> cols;
    std::stringstream ss(line);
    std::string col;
    while (std::getline(ss, col, ',')) {
      while (!col.empty() && col.front() == ' ') col.erase(0, 1);
      cols.push_back(col);
    }
    if (cols.size() < 4) continue;
    if (f.count == 0) {
      f.name = cols[0];
      f.type = GpuTypeFromName(cols[0]);
      f.compute_capability = cols[1];
      f.memory_bytes = std::stoull(cols[2]) * 1024 * 1024;
      f.driver_version = cols[3];
    }
    ++f.count;
  }
  return f;
}

}  // namespace kforge
