// Length-prefixed frames over a file descriptor: a 4-byte little-endian length, then that many
// bytes. The fork server (kforge-eval --serve) and the worker's client speak it.
//
// Thread-safety: pure functions over the descriptor; one reader and one writer per descriptor.
#ifndef KFORGE_COMMON_BASE_FRAMES_H_
#define KFORGE_COMMON_BASE_FRAMES_H_

#include <cstddef>
#include <string>

namespace kforge {

constexpr size_t kMaxFrameBytes = 256u << 20;

enum class FrameStatus { kOk, kEnd, kBroken, kTimeout };

// Reads one frame into `out`. kEnd: end of input before the first byte; kBroken: end of input
// or an error inside a frame, or a length above kMaxFrameBytes; kTimeout: `timeout_s` (>= 0)
// passed first (a negative timeout waits for ever).
FrameStatus ReadFrame(int fd, std::string* out, double timeout_s = -1);
// False when the descriptor broke (the reader went away) or, on a non-blocking descriptor,
// when `timeout_s` (>= 0) passed before the whole frame was written.
bool WriteFrame(int fd, const std::string& data, double timeout_s = -1);

}  // namespace kforge

#endif  // KFORGE_COMMON_BASE_FRAMES_H_
