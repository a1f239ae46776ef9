#include "gpu_worker/eval/activity_trace.h"

#include <cupti.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "gpu_worker/dynamic_symbol.h"

namespace kforge::eval {

CallSplit SplitCall(const std::vector<ActivityRecord>& records, uint64_t mark, uint64_t ret) {
  // correlation -> the API calls' earliest start and latest end (a runtime call and the driver
  // call inside it may share one)
  std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> api_call;
  bool host_ordered = false;  // an API call that waits for the host or runs host code
  for (const auto& r : records) {
    if (r.kind != ActivityRecord::kApi) continue;
    host_ordered = host_ordered || r.host_ordered;
    auto [it, added] = api_call.emplace(r.correlation, std::make_pair(r.start, r.end));
    if (!added) {
      it->second.first = std::min(it->second.first, r.start);
      it->second.second = std::max(it->second.second, r.end);
    }
  }
  CallSplit s;
  uint64_t first = std::numeric_limits<uint64_t>::max(), last = 0;
  uint64_t first_api = std::numeric_limits<uint64_t>::max(), last_api_end = 0;
  bool unlaunched = false;  // a GPU activity no recorded API call of the call launched
  uint64_t timer_end = 0;  // the end of the GPU work launched before the mark
  int timer_activities = 0;
  std::vector<std::pair<uint64_t, uint64_t>> intervals;  // the call's activities
  std::vector<std::pair<uint64_t, uint32_t>> kernels;    // the call's kernels: start, name
  for (const auto& r : records) {
    if (r.kind != ActivityRecord::kGpu) continue;
    auto api = api_call.find(r.correlation);
    // The timer's own: launched before the mark, or (its API record missing) already running
    // then; the call launches nothing before the mark.
    const bool launched_before = api != api_call.end() ? api->second.first < mark : r.start < mark;
    if (r.end < mark || launched_before) {
      timer_end = std::max(timer_end, r.end);  // launched before the call
      ++timer_activities;
      continue;
    }
    ++s.gpu_activities;
    if (r.kernel != 0) kernels.emplace_back(r.start, r.kernel);
    if (r.end >= r.start) intervals.emplace_back(r.start, r.end);  // zero-length ones too: gaps
    first = std::min(first, r.start);
    last = std::max(last, r.end);
    if (api == api_call.end()) {
      unlaunched = true;
    } else {
      first_api = std::min(first_api, api->second.first);
      last_api_end = std::max(last_api_end, api->second.second);
    }
  }
  // Host time of the call from when the device was free of the timer's own work.
  const uint64_t host_from = std::max(mark, timer_end);
  s.host_ms = ret > host_from ? static_cast<double>(ret - host_from) / 1e6 : 0;
  if (s.gpu_activities == 0) return s;
  s.found = true;
  std::sort(kernels.begin(), kernels.end());
  for (const auto& [start, name] : kernels) {
    if (std::find(s.kernels.begin(), s.kernels.end(), name) == s.kernels.end()) {
      s.kernels.push_back(name);
    }
  }
  // Without the launching API call of every activity, the time from the mark to the first
  // activity is counted whole (pre), none of it as latency.
  // (A GPU timestamp may read a little before its API call's: the clocks are two.)
  const uint64_t pre_end = std::max(mark, unlaunched ? first : std::min(first_api, first));
  s.pre_ms = static_cast<double>(pre_end - mark) / 1e6;
  s.lat_ms = first > pre_end ? static_cast<double>(first - pre_end) / 1e6 : 0;
  s.span_ms = static_cast<double>(last - first) / 1e6;
  // Both sides of `first >= timer_end` are GPU timestamps; `last_api_end <= first` compares
  // the host's clock with them (CUPTI normalises the GPU's to it).
  s.queued = timer_activities == 1 && !host_ordered && !unlaunched && first >= timer_end &&
             last_api_end <= first;
  std::sort(intervals.begin(), intervals.end());
  uint64_t busy = 0, counted_gaps = 0, short_gaps = 0, run_start = 0, run_end = 0;
  for (size_t i = 0; i < intervals.size(); ++i) {
    if (i == 0 || intervals[i].first > run_end) {
      if (i > 0) {
        const uint64_t gap = intervals[i].first - run_end;
        if (gap > kMaxFrontEndGapNs || short_gaps + gap > kMaxFrontEndGapsNs) {
          counted_gaps += gap;
        } else {
          short_gaps += gap;
        }
      }
      busy += run_end - run_start;
      run_start = intervals[i].first;
      run_end = intervals[i].second;
    } else {
      run_end = std::max(run_end, intervals[i].second);
    }
  }
  busy += run_end - run_start;
  s.busy_ms = static_cast<double>(busy) / 1e6;
  s.work_ms = static_cast<double>(busy + counted_gaps) / 1e6;
  s.post_ms = ret > last ? static_cast<double>(ret - last) / 1e6 : 0;
  const uint64_t window_end = std::max(last, ret);
  s.window_ms = window_end > host_from ? static_cast<double>(window_end - host_from) / 1e6 : 0;
  return s;
}

namespace {

constexpr size_t kBufferBytes = 4 << 20;

struct Cupti {
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) num_dropped = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  decltype(&cuptiGetVersion) version = nullptr;
};

// Filled once by Load; read-only afterwards (the callbacks read it on CUPTI's thread).
Cupti g_cupti;
// One trace at a time (CUPTI's callbacks are process-wide).
std::mutex g_active_mu;
bool g_active = false;

struct Pending {
  std::mutex mu;
  std::vector<ActivityRecord> records;
  bool dropped = false;
};
Pending& GetPending() {
  static auto* p = new Pending;
  return *p;
}

const CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMCPY2,           CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME,           CUPTI_ACTIVITY_KIND_DRIVER,
};

template <typename Fn>
bool Sym(void* lib, const char* name, Fn** out, std::string* why_not) {
  if (BindSymbol(lib, name, out)) return true;
  *why_not = std::string("CUPTI has no ") + name;
  return false;
}

bool Load(std::string* why_not) {
  // libtorch_cpu needs libcupti.so.13, so it is normally loaded already.
  void* lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    *why_not = std::string("cannot load libcupti.so.13: ") + (err ? err : "unknown error");
    return false;
  }
  Cupti c;
  if (!Sym(lib, "cuptiActivityRegisterCallbacks", &c.register_callbacks, why_not) ||
      !Sym(lib, "cuptiActivityEnable", &c.enable, why_not) ||
      !Sym(lib, "cuptiActivityDisable", &c.disable, why_not) ||
      !Sym(lib, "cuptiActivityFlushAll", &c.flush_all, why_not) ||
      !Sym(lib, "cuptiActivityGetNextRecord", &c.next_record, why_not) ||
      !Sym(lib, "cuptiActivityGetNumDroppedRecords", &c.num_dropped, why_not) ||
      !Sym(lib, "cuptiGetTimestamp", &c.timestamp, why_not) ||
      !Sym(lib, "cuptiGetResultString", &c.result_string, why_not) ||
      !Sym(lib, "cuptiGetVersion", &c.version, why_not)) {
    return false;
  }
  // The records are read with this build's struct layouts (CUpti_ActivityKernel10, ...), which
  // a library of another API version may not share.
  uint32_t version = 0;
  if (c.version(&version) != CUPTI_SUCCESS || version / 100 != CUPTI_API_VERSION / 100) {
    *why_not = "libcupti.so.13 has API version " + std::to_string(version) + ", built against " +
               std::to_string(CUPTI_API_VERSION);
    return false;
  }
  g_cupti = c;
  return true;
}

std::string ResultString(CUptiResult r) {
  const char* s = nullptr;
  if (g_cupti.result_string) g_cupti.result_string(r, &s);
  return s ? s : "CUPTI error " + std::to_string(static_cast<int>(r));
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

// Kernel names, each kept once (CUPTI's own strings are not promised to outlive the records).
struct KernelNames {
  std::mutex mu;
  std::unordered_map<std::string, uint32_t> ids;
  std::vector<std::string> names = {""};  // id 0: none
};
KernelNames& GetKernelNames() {
  static auto* n = new KernelNames;
  return *n;
}

uint32_t KernelId(const char* name) {
  if (name == nullptr) return 0;
  KernelNames& n = GetKernelNames();
  std::lock_guard<std::mutex> lock(n.mu);
  auto [it, added] = n.ids.emplace(name, static_cast<uint32_t>(n.names.size()));
  if (added) n.names.push_back(it->first);
  return it->second;
}

template <typename T>
ActivityRecord Gpu(const CUpti_Activity* r) {
  const auto* a = reinterpret_cast<const T*>(r);
  return {ActivityRecord::kGpu, a->start, a->end, a->correlationId};
}

// ActivityRecord::host_ordered, by the driver API's callback id.
bool HostOrdered(CUpti_CallbackId cbid) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue32:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue32_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue32_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue32_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue64:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue64_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue64_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue64_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      return true;
    default:
      return false;
  }
}

void CUPTIAPI BufferCompleted(CUcontext context, uint32_t stream, uint8_t* buffer, size_t,
                              size_t valid) {
  std::vector<ActivityRecord> got;
  CUpti_Activity* r = nullptr;
  while (g_cupti.next_record(buffer, valid, &r) == CUPTI_SUCCESS) {
    switch (r->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL:
        got.push_back(Gpu<CUpti_ActivityKernel10>(r));
        got.back().kernel = KernelId(reinterpret_cast<const CUpti_ActivityKernel10*>(r)->name);
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY:
        got.push_back(Gpu<CUpti_ActivityMemcpy6>(r));
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY2:
        got.push_back(Gpu<CUpti_ActivityMemcpyPtoP4>(r));
        break;
      case CUPTI_ACTIVITY_KIND_MEMSET:
        got.push_back(Gpu<CUpti_ActivityMemset4>(r));
        break;
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(r);
        got.push_back({ActivityRecord::kApi, a->start, a->end, a->correlationId});
        got.back().host_ordered = r->kind == CUPTI_ACTIVITY_KIND_DRIVER && HostOrdered(a->cbid);
        break;
      }
      default:
        break;
    }
  }
  size_t dropped = 0;
  g_cupti.num_dropped(context, stream, &dropped);
  std::free(buffer);
  Pending& p = GetPending();
  std::lock_guard<std::mutex> lock(p.mu);
  p.records.insert(p.records.end(), got.begin(), got.end());
  p.dropped = p.dropped || dropped > 0;
}

void ForgetPending() {
  Pending& p = GetPending();
  std::lock_guard<std::mutex> lock(p.mu);
  p.records.clear();
  p.dropped = false;
}

}  // namespace

std::unique_ptr<ActivityTrace> ActivityTrace::Start(std::string* why_not) {
  std::lock_guard<std::mutex> lock(g_active_mu);
  if (g_active) {
    *why_not = "another activity trace is active in this process";
    return nullptr;
  }
  if (g_cupti.enable == nullptr && !Load(why_not)) return nullptr;
  CUptiResult r = g_cupti.register_callbacks(BufferRequested, BufferCompleted);
  if (r != CUPTI_SUCCESS) {
    *why_not = "cuptiActivityRegisterCallbacks: " + ResultString(r);
    return nullptr;
  }
  for (CUpti_ActivityKind k : kKinds) {
    r = g_cupti.enable(k);
    if (r != CUPTI_SUCCESS) {
      *why_not = "cuptiActivityEnable(" + std::to_string(static_cast<int>(k)) +
                 "): " + ResultString(r);
      for (CUpti_ActivityKind e : kKinds) g_cupti.disable(e);
      return nullptr;
    }
  }
  g_active = true;
  return std::unique_ptr<ActivityTrace>(new ActivityTrace);
}

ActivityTrace::~ActivityTrace() {
  for (CUpti_ActivityKind k : kKinds) g_cupti.disable(k);
  g_cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  ForgetPending();
  std::lock_guard<std::mutex> active_lock(g_active_mu);
  g_active = false;
}

uint64_t ActivityTrace::Now() const {
  uint64_t t = 0;
  g_cupti.timestamp(&t);
  return t;
}

CallSplit ActivityTrace::Collect(uint64_t mark, uint64_t ret, bool* dropped) {
  g_cupti.flush_all(0);
  std::vector<ActivityRecord> records;
  Pending& p = GetPending();
  {
    std::lock_guard<std::mutex> lock(p.mu);
    records.swap(p.records);
    *dropped = p.dropped;
    p.dropped = false;
  }
  return SplitCall(records, mark, ret);
}

std::string ActivityTrace::KernelName(uint32_t id) {
  KernelNames& n = GetKernelNames();
  std::lock_guard<std::mutex> lock(n.mu);
  return id < n.names.size() ? n.names[id] : std::string();
}

void ActivityTrace::Discard() {
  g_cupti.flush_all(0);
  ForgetPending();
}

}  // namespace kforge::eval
