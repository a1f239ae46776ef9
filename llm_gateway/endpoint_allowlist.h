// Which LLM endpoints a request's `llm.base_url` may name. The gateway POSTs a job's prompts
// (the task's source, earlier candidates) to that URL, so a researcher must not be able to
// point it at a server of their choosing; the operator lists the endpoints that are allowed
// (--allowed_base_urls), and the configured providers' own base URLs always are.
//
// Matching is on parsed URLs, never on strings: scheme (http or https), host (lowercased),
// port (the scheme's default when absent) must be equal, and the entry's path must be a
// prefix of the URL's path on a segment boundary ("/v1" allows "/v1" and "/v1/x", not
// "/v10"). Parsing is strict: userinfo ("user@"), a query or fragment, percent-escapes,
// backslashes, whitespace, "." or ".." path segments, empty host labels and a trailing dot in
// the host are refused, so no two parsers (ours and libcurl's) can disagree about which host
// is meant.
//
// Thread-safety: immutable after construction; safe to share.
#ifndef KFORGE_LLM_GATEWAY_ENDPOINT_ALLOWLIST_H_
#define KFORGE_LLM_GATEWAY_ENDPOINT_ALLOWLIST_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kforge::gateway {

// A base URL in canonical form.
struct EndpointUrl {
  std::string scheme;  // "http" or "https"
  std::string host;    // lowercased; an IPv6 literal keeps its brackets
  int port = 0;        // explicit or the scheme's default
  std::string path;    // "" or "/a/b" (no trailing slash)

  std::string ToString() const;  // scheme://host:port/path
  bool operator==(const EndpointUrl& o) const {
    return scheme == o.scheme && host == o.host && port == o.port && path == o.path;
  }
};

// INVALID_ARGUMENT saying what is wrong with `url`.
absl::StatusOr<EndpointUrl> ParseEndpoint(const std::string& url);

class EndpointAllowList {
 public:
  // `list`: comma-separated URL prefixes (empty entries and spaces around them ignored);
  // INVALID_ARGUMENT naming the first entry that does not parse.
  static absl::StatusOr<EndpointAllowList> Parse(const std::string& list);

  // Adds one allowed prefix (a provider's own base URL).
  absl::Status Add(const std::string& url);
  // True when `url` parses and lies under an allowed prefix.
  bool Allows(const std::string& url) const;
  // OK, or PERMISSION_DENIED naming the URL, why, and the allowed prefixes.
  absl::Status Check(const std::string& url) const;
  // The allowed prefixes, canonical, comma-separated.
  std::string ToString() const;

 private:
  std::vector<EndpointUrl> allowed_;
};

}  // namespace kforge::gateway

#endif  // KFORGE_LLM_GATEWAY_ENDPOINT_ALLOWLIST_H_
