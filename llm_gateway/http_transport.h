// HTTP POST for the LLM providers: an interface, and its libcurl implementation (HTTPS with
// the system's CA store, HTTP for local servers such as vLLM or the tests' fake provider).
//
// Thread-safety: CurlTransport is thread-safe; each Post uses its own curl handle, so calls
// from many threads run concurrently. Secrets travel only in `headers`; nothing here logs a
// header, and error messages carry neither headers nor bodies.
#ifndef KFORGE_LLM_GATEWAY_HTTP_TRANSPORT_H_
#define KFORGE_LLM_GATEWAY_HTTP_TRANSPORT_H_

#include <string>
#include <utility>
#include <vector>

namespace kforge::gateway {

struct HttpRequest {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  double timeout_s = 300;  // the whole exchange
  double connect_timeout_s = 10;
};

struct HttpReply {
  enum class Failure { kNone, kTimeout, kNetwork };
  Failure failure = Failure::kNone;  // kNone: an HTTP status came back
  std::string error;                 // why, when failure != kNone
  int status = 0;
  std::string body;
  std::string retry_after;  // the Retry-After header, if any
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  virtual HttpReply Post(const HttpRequest& request) = 0;
};

class CurlTransport final : public HttpTransport {
 public:
  CurlTransport();  // initialises libcurl once per process
  HttpReply Post(const HttpRequest& request) override;
};

}  // namespace kforge::gateway

#endif  // KFORGE_LLM_GATEWAY_HTTP_TRANSPORT_H_
