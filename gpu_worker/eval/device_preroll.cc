#include "gpu_worker/eval/device_preroll.h"

#include <algorithm>

namespace kforge::eval {

PrerollGovernor::PrerollGovernor(double start_ms, double max_ms, double tolerance_ms)
    : preroll_ms_(std::min(start_ms, max_ms)),
      floor_ms_(preroll_ms_),
      max_ms_(max_ms),
      tolerance_ms_(tolerance_ms) {}

bool PrerollGovernor::Keep(double late_host_ms) {
  if (late_host_ms > tolerance_ms_ && CanGrow()) {
    ++dropped_;
    return false;
  }
  late_kept_pending_ = std::max(late_kept_pending_, late_host_ms);
  return true;
}

void PrerollGovernor::AfterIteration(double late_host_ms, bool sampled) {
  if (sampled) late_kept_ms_ = std::max(late_kept_ms_, late_kept_pending_);
  late_kept_pending_ = 0;
  if (sampled && !CanGrow() && at_max_ < kHostBoundIterations) {
    ++at_max_;
    if (late_host_ms > kHostBoundLateMs) ++late_at_max_;
    if (at_max_ == kHostBoundIterations) host_bound_ = 2 * late_at_max_ >= at_max_;
  }
  const bool late = late_host_ms > tolerance_ms_;
  if (late) {
    // The floor first, from the pre-roll the host was late under, where a sample of the
    // iteration could be left out for it (device_preroll.h).
    if (sampled && CanGrow()) {
      floor_ms_ = std::min(max_ms_, std::max(floor_ms_, preroll_ms_ + 2 * tolerance_ms_ + 0.1));
    }
    // Twice the lateness and a margin: the host's launch time varies from call to call, and a
    // pre-roll grown by exactly the last lateness would be late again half of the time.
    preroll_ms_ = std::min(max_ms_, preroll_ms_ + 2 * late_host_ms + 0.1);
  }
  if (!shrink_) return;
  if (late) {  // the window begins again
    on_time_ = 0;
    window_launch_ms_ = 0;
    return;
  }
  if (!sampled || ++on_time_ < kShrinkWindow) return;
  const double reference_ms =
      *std::max_element(reference_launches_.begin(), reference_launches_.end());
  const double target = 1.5 * std::max(window_launch_ms_, reference_ms) + 0.1;
  const double next = std::max({target, preroll_ms_ / 2, floor_ms_});
  if (reference_noted_ > 0 && next < preroll_ms_) {
    preroll_ms_ = next;
    ++shrinks_;
  }
  on_time_ = 0;
  window_launch_ms_ = 0;
}

void PrerollGovernor::NoteLaunch(double launch_ms, bool reference) {
  if (!(launch_ms > 0)) return;
  if (reference) {
    reference_launches_[reference_noted_++ % kShrinkWindow] = launch_ms;
  } else if (launch_ms > window_launch_ms_) {
    window_launch_ms_ = launch_ms;
  }
}

}  // namespace kforge::eval
