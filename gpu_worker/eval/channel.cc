#include "gpu_worker/eval/channel.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace kforge::eval {
namespace {

constexpr size_t kMaxFds = 16;

}  // namespace

Channel::Channel(int fd, size_t max_frame) : fd_(fd), max_frame_(max_frame) {}

Channel::~Channel() {
  if (fd_ >= 0) close(fd_);
}

bool Channel::Send(const google::protobuf::MessageLite& message, const std::vector<int>& fds,
                   std::string* error) {
  if (fds.size() > kMaxFds) {
    *error = "too many descriptors for one frame";
    return false;
  }
  std::string frame(4, '\0');
  const uint32_t n = static_cast<uint32_t>(message.ByteSizeLong());
  for (int i = 0; i < 4; ++i) frame[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  if (!message.AppendToString(&frame)) {
    *error = "cannot serialize the message";
    return false;
  }
  size_t sent = 0;
  bool fds_sent = fds.empty();
  while (sent < frame.size()) {
    struct iovec iov = {frame.data() + sent, frame.size() - sent};
    struct msghdr msg = {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
    if (!fds_sent) {
      msg.msg_control = control;
      msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    ssize_t w = sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      *error = std::string("the peer is gone (") + std::strerror(errno) + ")";
      return false;
    }
    fds_sent = true;
    sent += static_cast<size_t>(w);
  }
  return true;
}

bool Channel::ReadExact(char* data, size_t n, std::vector<int>* fds, std::string* error) {
  size_t got = 0;
  while (got < n) {
    struct iovec iov = {data + got, n - got};
    struct msghdr msg = {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t r = recvmsg(fd_, &msg, MSG_CMSG_CLOEXEC);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      *error = "the peer closed the channel";
      return false;
    }
    if (r < 0) {
      *error = std::string("cannot read from the peer (") + std::strerror(errno) + ")";
      return false;
    }
    for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        if (fds != nullptr) {
          fds->push_back(fd);
        } else {
          close(fd);
        }
      }
    }
    if (msg.msg_flags & MSG_CTRUNC) {
      *error = "the peer sent more descriptors than a frame may carry";
      return false;
    }
    got += static_cast<size_t>(r);
  }
  return true;
}

void Channel::SpinUntilReadable() const {
  if (spin_us_ == 0) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us_);
  struct pollfd p = {fd_, POLLIN, 0};
  do {
    p.revents = 0;
    if (poll(&p, 1, 0) != 0) return;  // readable, closed, or an error the read will report
  } while (std::chrono::steady_clock::now() < until);
}

uint32_t ChannelSpinUs(bool cuda) {
  constexpr long kMaxUs = 100000;
  if (const char* env = std::getenv("KFORGE_CHANNEL_SPIN_US"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    const long us = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && us >= 0) return static_cast<uint32_t>(std::min(us, kMaxUs));
  }
  return cuda ? 5000 : 0;
}

bool Channel::Receive(google::protobuf::MessageLite* message, std::vector<int>* fds,
                      std::string* error) {
  SpinUntilReadable();
  unsigned char header[4];
  if (!ReadExact(reinterpret_cast<char*>(header), sizeof header, fds, error)) return false;
  const uint32_t n = header[0] | (header[1] << 8) | (header[2] << 16) |
                     (static_cast<uint32_t>(header[3]) << 24);
  if (n > max_frame_) {
    *error = "the peer sent a frame of " + std::to_string(n) + " bytes (at most " +
             std::to_string(max_frame_) + " are accepted)";
    return false;
  }
  std::string body(n, '\0');
  if (!ReadExact(body.data(), n, fds, error)) return false;
  if (!message->ParseFromString(body)) {
    *error = "the peer sent a frame that is not a valid message";
    return false;
  }
  return true;
}

}  // namespace kforge::eval
