#include "common/base/frames.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace kforge {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point DeadlineAfter(double timeout_s) {
  return timeout_s < 0 ? Clock::time_point::max()
                       : Clock::now() + std::chrono::microseconds(
                                            static_cast<int64_t>(timeout_s * 1e6));
}

// Waits until `fd` is ready for `events`; false once the deadline passed.
bool WaitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    struct pollfd pfd = {fd, events, 0};
    int r = poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 60000)));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return true;  // let the read or write report the error
  }
}

// Reads exactly n bytes. Returns the count read before end of input, or -1 on error/timeout.
ssize_t ReadExactly(int fd, char* p, size_t n, Clock::time_point deadline, bool* timed_out) {
  size_t got = 0;
  while (got < n) {
    if (deadline != Clock::time_point::max() && !WaitFor(fd, POLLIN, deadline)) {
      *timed_out = true;
      return -1;
    }
    ssize_t r = read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(got);
}

}  // namespace

FrameStatus ReadFrame(int fd, std::string* out, double timeout_s) {
  auto deadline = DeadlineAfter(timeout_s);
  bool timed_out = false;
  unsigned char len[4];
  ssize_t n = ReadExactly(fd, reinterpret_cast<char*>(len), 4, deadline, &timed_out);
  if (timed_out) return FrameStatus::kTimeout;
  if (n == 0) return FrameStatus::kEnd;
  if (n != 4) return FrameStatus::kBroken;
  size_t size = static_cast<size_t>(len[0]) | static_cast<size_t>(len[1]) << 8 |
                static_cast<size_t>(len[2]) << 16 | static_cast<size_t>(len[3]) << 24;
  if (size > kMaxFrameBytes) return FrameStatus::kBroken;
  out->resize(size);
  n = ReadExactly(fd, out->data(), size, deadline, &timed_out);
  if (timed_out) return FrameStatus::kTimeout;
  return n == static_cast<ssize_t>(size) ? FrameStatus::kOk : FrameStatus::kBroken;
}

bool WriteFrame(int fd, const std::string& data, double timeout_s) {
  auto deadline = DeadlineAfter(timeout_s);
  if (data.size() > kMaxFrameBytes) return false;
  uint32_t size = static_cast<uint32_t>(data.size());
  std::string frame = {static_cast<char>(size & 0xff), static_cast<char>((size >> 8) & 0xff),
                       static_cast<char>((size >> 16) & 0xff),
                       static_cast<char>((size >> 24) & 0xff)};
  frame += data;
  const char* p = frame.data();
  size_t left = frame.size();
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) {
      if (!WaitFor(fd, POLLOUT, deadline)) return false;
      continue;
    }
    if (w <= 0) return false;
    p += w;
    left -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace kforge
