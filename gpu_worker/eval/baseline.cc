#include "gpu_worker/eval/baseline.h"

#include <ATen/core/grad_mode.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#include <pybind11/embed.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "common/base/log.h"
#include "gpu_worker/eval/model_io.h"
#include "gpu_worker/eval/python_runtime.h"
#include "gpu_worker/eval/timing.h"

namespace py = pybind11;

namespace kforge::eval {
namespace {

constexpr uint64_t kBaselineSeed = 42;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int RunBaseline(const BaselineOptions& o) {
  std::string error;
  auto interp = StartPython(&error);
  if (!interp) {
    std::fprintf(stderr, "kforge-eval: %s\n", error.c_str());
    return 1;
  }
  Target target;
  if (o.device != "cpu") {
    target.cuda = true;
    target.index = o.device.size() > 5 ? std::atoi(o.device.c_str() + 5) : 0;
    if (cudaSetDevice(target.index) != cudaSuccess) {
      std::fprintf(stderr, "kforge-eval: no CUDA device %d\n", target.index);
      return 1;
    }
  }
  cudaDeviceProp prop{};
  if (target.cuda) cudaGetDeviceProperties(&prop, target.index);

  std::vector<std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(o.dir)) {
    if (e.is_regular_file() && e.path().extension() == ".py") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  FILE* out = o.out_path.empty() ? stdout : std::fopen(o.out_path.c_str(), "w");
  if (!out) {
    std::fprintf(stderr, "kforge-eval: cannot write %s\n", o.out_path.c_str());
    return 1;
  }
  for (const std::string& path : files) {
    std::string rel = std::filesystem::relative(path, o.dir).string();
    std::string line = "{\"task\":";
    AppendJsonString(line, rel);
    auto start = std::chrono::steady_clock::now();
    try {
      py::object task = ExecModule("kforge_task", ReadAll(path));
      SeedAll(kBaselineSeed);
      py::list init = ToDevice(task.attr("get_init_inputs")(), Target{});
      SeedAll(kBaselineSeed);
      py::object model = CallOnDevice(task.attr("Model"), target, init).attr("to")(target.name());
      SeedAll(kBaselineSeed + 1);
      py::list inputs = ToDevice(CallOnDevice(task.attr("get_inputs"), target), target);
      Program ref = [&](int) {
        at::NoGradGuard g;
        model(*inputs);
      };
      TimingOptions t;
      t.cuda = target.cuda;
      t.device = target.index;
      t.l2_bytes = static_cast<uint64_t>(prop.l2CacheSize);
      t.min_samples = o.min_samples;
      t.time_cap_s = o.per_task_cap_s;
      t.warmup = 2;
      if (o.events_clock) t.clock = TimingClock::kEvents;
      TimingOutcome r = TimeInterleaved(ref, Program(), t);
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    ",\"ok\":true,\"median_ms\":%.6f,\"mean_ms\":%.6f,\"min_ms\":%.6f,"
                    "\"std_ms\":%.6f,\"n\":%u,\"clock\":\"%s\"",
                    r.reference.median_ms(), r.reference.mean_ms(), r.reference.min_ms(),
                    r.reference.std_ms(), r.reference.n(), TimingClockName(r.clock));
      line += buf;
    } catch (const py::error_already_set& e) {
      line += ",\"ok\":false,\"error\":";
      AppendJsonString(line, DescribePythonError(e, 400));
    } catch (const std::exception& e) {
      line += ",\"ok\":false,\"error\":";
      AppendJsonString(line, e.what());
    }
    char wall[64];
    std::snprintf(wall, sizeof wall, ",\"wall_s\":%.3f}",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    line += wall;
    std::fprintf(out, "%s\n", line.c_str());
    std::fflush(out);
    py::module_::import("gc").attr("collect")();
    if (target.cuda) c10::cuda::CUDACachingAllocator::emptyCache();
  }
  if (out != stdout) std::fclose(out);
  return 0;
}

}  // namespace kforge::eval
