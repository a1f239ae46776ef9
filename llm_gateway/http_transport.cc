#include "llm_gateway/http_transport.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>

namespace kforge::gateway {
namespace {

constexpr size_t kMaxReplyBytes = 64 << 20;  // a reply past this is cut off as a network error

size_t AppendBody(char* data, size_t size, size_t n, void* user) {
  auto* body = static_cast<std::string*>(user);
  if (body->size() + size * n > kMaxReplyBytes) return 0;  // makes curl fail the transfer
  body->append(data, size * n);
  return size * n;
}

size_t ReadHeader(char* data, size_t size, size_t n, void* user) {
  std::string line(data, size * n);
  constexpr char kName[] = "retry-after:";
  if (line.size() > sizeof(kName) - 1) {
    std::string head = line.substr(0, sizeof(kName) - 1);
    std::transform(head.begin(), head.end(), head.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (head == kName) {
      std::string value = line.substr(sizeof(kName) - 1);
      auto blank = [](unsigned char c) { return std::isspace(c) != 0; };
      value.erase(value.begin(), std::find_if_not(value.begin(), value.end(), blank));
      while (!value.empty() && blank(value.back())) value.pop_back();
      *static_cast<std::string*>(user) = value;
    }
  }
  return size * n;
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

}  // namespace

CurlTransport::CurlTransport() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

HttpReply CurlTransport::Post(const HttpRequest& request) {
  HttpReply reply;
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) {
    reply.failure = HttpReply::Failure::kNetwork;
    reply.error = "curl_easy_init failed";
    return reply;
  }
  std::unique_ptr<curl_slist, SlistDeleter> headers;
  curl_slist* list = nullptr;
  for (const auto& [name, value] : request.headers) {
    list = curl_slist_append(list, (name + ": " + value).c_str());
  }
  list = curl_slist_append(list, "Expect:");  // no 100-continue round trip for large prompts
  headers.reset(list);
  char error[CURL_ERROR_SIZE] = {0};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(request.connect_timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // several threads; no SIGALRM for DNS timeouts
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, ReadHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &reply.retry_after);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");  // whatever libcurl can decode
  CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    reply.failure = rc == CURLE_OPERATION_TIMEDOUT ? HttpReply::Failure::kTimeout
                                                   : HttpReply::Failure::kNetwork;
    reply.error = error[0] != '\0' ? error : curl_easy_strerror(rc);
    reply.body.clear();
    return reply;
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  reply.status = static_cast<int>(status);
  return reply;
}

}  // namespace kforge::gateway
