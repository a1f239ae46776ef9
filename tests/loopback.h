// Loopback networking for tests: a port nothing listens on, and a minimal HTTP client (enough
// to scrape /metrics without pulling an HTTP library into the tests).
//
// Thread-safe: plain functions without shared state.
#ifndef KFORGE_TESTS_LOOPBACK_H_
#define KFORGE_TESTS_LOOPBACK_H_

#include <string>

#include "absl/status/statusor.h"

namespace kforge {

// A loopback port nothing listened on a moment ago (bound to port 0, then released). Another
// process may take it before the caller binds it; callers that bind retry with a new one.
absl::StatusOr<int> UnusedLoopbackPort();

struct HttpResponse {
  int status = 0;  // 200, 404...
  std::string headers;
  std::string body;
};

// An HTTP/1.0 GET of `path` from 127.0.0.1:port, read until the server closes the connection.
// UNAVAILABLE when the connection fails, DEADLINE_EXCEEDED past `timeout_s`, INTERNAL when the
// answer is not HTTP.
absl::StatusOr<HttpResponse> HttpGet(int port, const std::string& path, double timeout_s = 10);

}  // namespace kforge

#endif  // KFORGE_TESTS_LOOPBACK_H_
