#include "gpu_worker/eval/call_profile.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "gpu_worker/eval/env_switch.h"

namespace kforge::eval {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string Us(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", us);
  return buf;
}

}  // namespace

bool CallProfileOn() {
  static const bool on = EnvSwitchOn("KFORGE_CALL_PROFILE");
  return on;
}

void CallProfile::Add(CallKind kind, double send_us, double roundtrip_us,
                      std::vector<double> stamps_us) {
  Calls& c = kind == CallKind::kNull ? null_ : kind == CallKind::kTraced ? traced_ : calls_;
  c.send.push_back(send_us);
  c.roundtrip.push_back(roundtrip_us);
  if (!stamps_us.empty()) c.outside.push_back(roundtrip_us - stamps_us.back());
  constexpr size_t kSteps = std::size(kCallSteps);
  if (c.steps.size() < kSteps) c.steps.resize(kSteps);
  for (size_t i = 0; i < stamps_us.size() && i < kSteps; ++i) c.steps[i].push_back(stamps_us[i]);
}

std::string CallProfile::Line(const char* kind, const Calls& c) {
  std::string s = "kforge-call-profile {\"kind\": \"" + std::string(kind) +
                  "\", \"calls\": " + std::to_string(c.roundtrip.size()) +
                  ", \"send_us\": " + Us(Median(c.send)) +
                  ", \"roundtrip_us\": " + Us(Median(c.roundtrip)) + ", \"candidate_us\": {";
  for (size_t i = 0; i < c.steps.size(); ++i) {
    if (c.steps[i].empty()) continue;
    if (s.back() != '{') s += ", ";
    s += "\"" + std::string(kCallSteps[i]) + "\": " + Us(Median(c.steps[i]));
  }
  s += "}, \"outside_candidate_us\": " + Us(Median(c.outside)) + "}\n";
  return s;
}

void CallProfile::AddReference(double forward_us, double slots_us) {
  ref_forward_.push_back(forward_us);
  ref_slots_.push_back(slots_us);
}

void CallProfile::AddReferenceDevice(const std::vector<double>& stamps_us) {
  constexpr size_t kSteps = std::size(kDeviceSampleSteps);
  if (ref_device_.size() < kSteps) ref_device_.resize(kSteps);
  for (size_t i = 0; i < stamps_us.size() && i < kSteps; ++i) {
    ref_device_[i].push_back(stamps_us[i]);
  }
}

std::string CallProfile::Summary() const {
  std::string s;
  if (!null_.roundtrip.empty()) s += Line("null", null_);
  if (!traced_.roundtrip.empty()) s += Line("traced", traced_);
  if (!calls_.roundtrip.empty()) s += Line("call", calls_);
  if (!ref_forward_.empty()) {
    s += "kforge-call-profile {\"kind\": \"reference\", \"calls\": " +
         std::to_string(ref_forward_.size()) +
         ", \"judge_us\": {\"forward\": " + Us(Median(ref_forward_)) +
         ", \"slots\": " + Us(Median(ref_slots_)) + "}}\n";
  }
  if (!ref_device_.empty() && !ref_device_[0].empty()) {
    s += "kforge-call-profile {\"kind\": \"reference_device\", \"samples\": " +
         std::to_string(ref_device_[0].size()) + ", \"judge_us\": {";
    for (size_t i = 0; i < ref_device_.size(); ++i) {
      if (ref_device_[i].empty()) continue;
      if (s.back() != '{') s += ", ";
      s += "\"" + std::string(kDeviceSampleSteps[i]) + "\": " + Us(Median(ref_device_[i]));
    }
    s += "}}\n";
  }
  return s;
}

}  // namespace kforge::eval
