#include "gpu_worker/eval/reference_share.h"

#include <algorithm>
#include <sstream>

#include "common/base/sha256.h"
#include "gpu_worker/eval/timing.h"

namespace kforge::eval {
namespace {

void DropSamples(v1::TimingStats* t) {
  t->clear_samples_ms();
  t->clear_tail_samples_ms();
  t->clear_event_samples_ms();
  t->clear_pre_samples_ms();
  t->clear_lat_samples_ms();
  t->clear_span_samples_ms();
  t->clear_host_samples_ms();
  t->clear_input_sets();  // set with the samples (KeepSamples)
}

}  // namespace

void ClearSharedReference(v1::EvalRequest* request) {
  request->clear_shared_reference_call_ms();
  request->clear_shared_reference_device_ms();
  request->clear_shared_reference_age_s();
}

std::string ReferenceShares::Key(const v1::EvalRequest& request, const char* clock) {
  std::ostringstream k;
  k << clock << '|' << Sha256Hex(request.task_source()) << '|' << request.device() << '|'
    << request.min_samples() << '|' << request.max_rel_stderr() << '|'
    << request.timing_preroll_ms() << '|' << request.limits().timing_s() << '|'
    << (request.policy().empty() ? "runtime" : request.policy());
  return k.str();
}

bool ReferenceShares::Prepare(v1::EvalRequest* request, Clock::time_point now) {
  ClearSharedReference(request);
  const bool client_keeps_samples = request->keep_samples();
  request->set_keep_samples(true);
  if (request->build_only()) return client_keeps_samples;
  double oldest_s = 0;
  for (const char* clock : {"call", "device"}) {
    if (clock[0] == 'c' && !share_call_) continue;
    auto it = entries_.find(Key(*request, clock));
    if (it == entries_.end()) continue;
    Entry& e = it->second;
    const double age_s = std::chrono::duration<double>(now - e.taken).count();
    if (age_s > kMaxAgeS || e.uses >= kMaxUses) {
      entries_.erase(it);
      continue;
    }
    ++e.uses;
    auto* to = clock[0] == 'c' ? request->mutable_shared_reference_call_ms()
                               : request->mutable_shared_reference_device_ms();
    to->Add(e.ms.begin(), e.ms.end());
    oldest_s = std::max(oldest_s, age_s);
  }
  request->set_shared_reference_age_s(oldest_s);
  return client_keeps_samples;
}

void ReferenceShares::Record(const v1::EvalRequest& request, bool client_keeps_samples,
                             v1::EvalResult* result, Clock::time_point now) {
  if (result->verdict() == v1::VERDICT_OK && !request.build_only()) {
    for (const char* clock : {"call", "device"}) {
      if (clock[0] == 'c' && !share_call_) continue;
      const v1::TimingStats& ref =
          clock[0] == 'c' ? result->reference_call() : result->reference_device();
      // Only a measurement the stop rule ended, in full and precise: a noisy one (a candidate
      // that disturbed the reference's samples, say) is not handed to other evaluations.
      if (ref.shared_samples() != 0 || ref.capped() || ref.settled() ||
          static_cast<size_t>(ref.samples_ms_size()) < kMinSamples ||
          RelStderrOfMedian({ref.samples_ms().begin(), ref.samples_ms().end()}) > kMaxRelStderr) {
        continue;
      }
      if (entries_.size() >= kMaxEntries) {  // the oldest goes
        auto oldest = entries_.begin();
        for (auto it = entries_.begin(); it != entries_.end(); ++it) {
          if (it->second.taken < oldest->second.taken) oldest = it;
        }
        entries_.erase(oldest);
      }
      Entry& e = entries_[Key(request, clock)];
      e.ms.assign(ref.samples_ms().begin(), ref.samples_ms().end());
      e.taken = now;
      e.uses = 0;
    }
  }
  if (client_keeps_samples) return;
  for (v1::TimingStats* t :
       {result->mutable_reference(), result->mutable_candidate(), result->mutable_reference_call(),
        result->mutable_candidate_call(), result->mutable_reference_device(),
        result->mutable_candidate_device()}) {
    DropSamples(t);
  }
}

}  // namespace kforge::eval
