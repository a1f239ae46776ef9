// A message channel between the judge and the candidate process: frames of a 4-byte
// little-endian length and a serialized protobuf, over one end of a Unix stream socketpair,
// with file descriptors (CPU mode's shared-memory slots) carried beside a frame (SCM_RIGHTS).
//
// The receiving side bounds what it accepts: a frame longer than `max_frame` bytes, a frame
// that does not parse, or more descriptors than asked for is an error, not an allocation or a
// crash (the judge reads the candidate process's frames as untrusted input). A peer that
// closes its end (it exited or died) reads as an error saying so.
//
// Thread-safety: one thread per Channel. Ownership: the Channel owns its descriptor.
#ifndef KFORGE_GPU_WORKER_EVAL_CHANNEL_H_
#define KFORGE_GPU_WORKER_EVAL_CHANNEL_H_

#include <google/protobuf/message_lite.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kforge::eval {

class Channel {
 public:
  // Takes ownership of `fd` (one end of a SOCK_STREAM socketpair).
  Channel(int fd, size_t max_frame);
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // Sends `message` with `fds` (not closed: the caller keeps its own). False with `error`.
  bool Send(const google::protobuf::MessageLite& message, const std::vector<int>& fds,
            std::string* error);
  bool Send(const google::protobuf::MessageLite& message, std::string* error) {
    return Send(message, {}, error);
  }
  // Receives one frame into `message`; descriptors that came with it are appended to `fds`
  // (the caller owns them) when `fds` is given, and closed otherwise.
  bool Receive(google::protobuf::MessageLite* message, std::vector<int>* fds,
               std::string* error);
  bool Receive(google::protobuf::MessageLite* message, std::string* error) {
    return Receive(message, nullptr, error);
  }

  int fd() const { return fd_; }

  // Before blocking for a frame, polls for it for up to `us` microseconds (0: never). A process
  // blocked in a read is woken by the scheduler, which on a virtual machine's idle CPU takes
  // tens to hundreds of microseconds, and every call-clock sample pays two such wake-ups (the
  // candidate process's for the call, the judge's for the answer). Costs a CPU while it polls.
  void set_spin_us(uint32_t us) { spin_us_ = us; }

 private:
  bool ReadExact(char* data, size_t n, std::vector<int>* fds, std::string* error);
  void SpinUntilReadable() const;

  int fd_;
  size_t max_frame_;
  uint32_t spin_us_ = 0;
};

// How long the judge's and the candidate process's channels poll before blocking
// (Channel::set_spin_us): KFORGE_CHANNEL_SPIN_US when set (0-100000), else 5000 on a GPU and 0
// in CPU mode (where the candidate's forward runs on the CPUs the polling would take).
uint32_t ChannelSpinUs(bool cuda);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_CHANNEL_H_
