#include "tests/fake_llm_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace kforge {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// Reads one request (headers, then Content-Length bytes). False when the peer went away.
bool ReadRequest(int fd, RecordedRequest* req) {
  std::string data;
  char buf[65536];
  size_t header_end;
  while ((header_end = data.find("\r\n\r\n")) == std::string::npos) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    data.append(buf, static_cast<size_t>(n));
  }
  std::string head = data.substr(0, header_end);
  size_t line_end = head.find("\r\n");
  std::string request_line = head.substr(0, line_end);
  size_t sp1 = request_line.find(' '), sp2 = request_line.rfind(' ');
  req->path = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
  while (pos < head.size()) {
    size_t end = head.find("\r\n", pos);
    if (end == std::string::npos) end = head.size();
    std::string line = head.substr(pos, end - pos);
    size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      req->headers[Lower(line.substr(0, colon))] = value;
    }
    pos = end + 2;
  }
  size_t length = 0;
  if (auto it = req->headers.find("content-length"); it != req->headers.end()) {
    if (!absl::SimpleAtoi(it->second, &length)) return false;
  }
  if (req->headers.count("expect")) SendAll(fd, "HTTP/1.1 100 Continue\r\n\r\n");
  req->body = data.substr(header_end + 4);
  while (req->body.size() < length) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    req->body.append(buf, static_cast<size_t>(n));
  }
  return true;
}

std::string ReplyBody(const RecordedRequest& req, const FakeReply& reply) {
  std::string body = reply.body;
  if (body.empty() && reply.status == 200) {
    nlohmann::json j;
    if (req.path == "/v1/messages") {
      j = {{"id", "msg_1"},
           {"type", "message"},
           {"role", "assistant"},
           {"content", {{{"type", "text"}, {"text", reply.completion}}}},
           {"stop_reason", reply.finish_reason.empty() ? "end_turn" : reply.finish_reason},
           {"usage", {{"input_tokens", reply.tokens_in}, {"output_tokens", reply.tokens_out}}}};
    } else {
      j = {
          {"id", "chatcmpl-1"},
          {"object", "chat.completion"},
          {"choices",
           {{{"index", 0},
             {"message", {{"role", "assistant"}, {"content", reply.completion}}},
             {"finish_reason", reply.finish_reason.empty() ? "stop" : reply.finish_reason}}}},
          {"usage", {{"prompt_tokens", reply.tokens_in}, {"completion_tokens", reply.tokens_out}}}};
    }
    body = j.dump();
  }
  if (reply.echo_headers) {
    for (const auto& [name, value] : req.headers) absl::StrAppend(&body, " ", name, "=", value);
  }
  return body;
}

}  // namespace

absl::StatusOr<std::unique_ptr<FakeLlmServer>> FakeLlmServer::Start() {
  std::unique_ptr<FakeLlmServer> server(new FakeLlmServer());
  server->listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (server->listen_fd_ < 0 ||
      bind(server->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(server->listen_fd_, 64) != 0 ||
      getsockname(server->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return absl::InternalError("fake LLM server: cannot listen on 127.0.0.1");
  }
  server->port_ = ntohs(addr.sin_port);
  server->acceptor_ = std::thread([s = server.get()] { s->AcceptLoop(); });
  return server;
}

FakeLlmServer::~FakeLlmServer() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
  acceptor_.join();
  close(listen_fd_);
  std::vector<std::thread> handlers;
  {
    absl::MutexLock lock(&mu_);
    handlers.swap(handlers_);
  }
  for (std::thread& t : handlers) t.join();
}

std::string FakeLlmServer::base_url() const { return absl::StrCat("http://127.0.0.1:", port_); }

void FakeLlmServer::Enqueue(FakeReply reply) {
  absl::MutexLock lock(&mu_);
  script_.push_back(std::move(reply));
}

void FakeLlmServer::SetDefault(FakeReply reply) {
  absl::MutexLock lock(&mu_);
  default_ = std::move(reply);
}

std::vector<RecordedRequest> FakeLlmServer::requests() const {
  absl::MutexLock lock(&mu_);
  return requests_;
}

int FakeLlmServer::max_in_flight() const {
  absl::MutexLock lock(&mu_);
  return max_in_flight_;
}

FakeReply FakeLlmServer::NextReply() {
  absl::MutexLock lock(&mu_);
  if (script_.empty()) return default_;
  FakeReply reply = std::move(script_.front());
  script_.pop_front();
  return reply;
}

void FakeLlmServer::AcceptLoop() {
  while (true) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    absl::MutexLock lock(&mu_);
    if (stopping_ || fd < 0) {
      if (fd >= 0) close(fd);
      if (stopping_) return;
      continue;
    }
    handlers_.emplace_back([this, fd] { Serve(fd); });
  }
}

void FakeLlmServer::Serve(int fd) {
  RecordedRequest req;
  if (ReadRequest(fd, &req)) {
    FakeReply reply = NextReply();
    {
      absl::MutexLock lock(&mu_);
      requests_.push_back(req);
      max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
      // The delay ends early when the server stops.
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Seconds(reply.delay_s));
      --in_flight_;
    }
    std::string body = ReplyBody(req, reply);
    std::string head =
        absl::StrCat("HTTP/1.1 ", reply.status, " Scripted\r\n",
                     "Content-Type: application/json\r\nContent-Length: ", body.size(),
                     "\r\nConnection: close\r\n");
    for (const auto& [name, value] : reply.headers)
      absl::StrAppend(&head, name, ": ", value, "\r\n");
    SendAll(fd, head + "\r\n" + body);
  }
  close(fd);
}

std::string CompletionWithCode(const std::string& analysis, const std::string& source) {
  return absl::StrCat(analysis, "\n\n```python\n", source, "```\n");
}

}  // namespace kforge
