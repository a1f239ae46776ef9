// A scripted LLM provider for tests: an HTTP/1.1 server on 127.0.0.1 (port 0) that speaks
// OpenAI chat completions (POST /v1/chat/completions) and Anthropic messages
// (POST /v1/messages). Each request takes the next scripted reply (or the default one): a
// status, headers, a raw body or a completion text that the server wraps in the protocol's
// JSON, and an optional delay before answering (to provoke client timeouts). Every request is
// recorded, and the server tracks how many were in flight at once.
//
// Thread-safety: all methods are thread-safe. One thread per connection; the destructor
// stops accepting, wakes delayed replies and joins every thread.
#ifndef KFORGE_TESTS_FAKE_LLM_SERVER_H_
#define KFORGE_TESTS_FAKE_LLM_SERVER_H_

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace kforge {

struct FakeReply {
  int status = 200;
  std::string completion;  // wrapped in the protocol's JSON when `body` is empty
  std::string body;        // sent as it is when not empty
  int64_t tokens_in = 100;
  int64_t tokens_out = 50;
  std::string finish_reason;  // "" : "stop" / "end_turn"
  std::vector<std::pair<std::string, std::string>> headers;
  double delay_s = 0;         // wait before answering
  bool echo_headers = false;  // append every request header to the body (leak tests)
};

struct RecordedRequest {
  std::string path;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

class FakeLlmServer {
 public:
  static absl::StatusOr<std::unique_ptr<FakeLlmServer>> Start();
  ~FakeLlmServer();

  std::string base_url() const;  // "http://127.0.0.1:PORT"
  void Enqueue(FakeReply reply);
  void SetDefault(FakeReply reply);
  std::vector<RecordedRequest> requests() const;
  int max_in_flight() const;

 private:
  FakeLlmServer() = default;
  void AcceptLoop();
  void Serve(int fd);
  FakeReply NextReply();

  int listen_fd_ = -1;
  int port_ = 0;
  std::thread acceptor_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<FakeReply> script_ ABSL_GUARDED_BY(mu_);
  FakeReply default_ ABSL_GUARDED_BY(mu_);
  std::vector<RecordedRequest> requests_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> handlers_ ABSL_GUARDED_BY(mu_);
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int max_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
};

// A complete nvrtc candidate as a model would answer it: analysis text, then one ```python
// block holding `source`.
std::string CompletionWithCode(const std::string& analysis, const std::string& source);

}  // namespace kforge

#endif  // KFORGE_TESTS_FAKE_LLM_SERVER_H_
