// For the sandbox's tests: a listening Unix socket at a path, open to every user, standing for
// a database's socket that a sandboxed child must not reach.
#ifndef KFORGE_GPU_WORKER_UNIX_LISTENER_FOR_TESTS_H_
#define KFORGE_GPU_WORKER_UNIX_LISTENER_FOR_TESTS_H_

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cstdio>
#include <string>

namespace kforge {

// The listening descriptor, or -1 when the socket cannot be made (the caller's expectations
// then fail on it).
inline int ListenOnUnixSocket(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      chmod(path.c_str(), 0777) != 0 || listen(fd, 8) != 0) {
    return -1;
  }
  return fd;
}

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_UNIX_LISTENER_FOR_TESTS_H_
