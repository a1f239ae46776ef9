#include "llm_gateway/endpoint_allowlist.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kforge::gateway {
namespace {

absl::Status Bad(const std::string& url, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("base URL \"", url, "\": ", why));
}

bool HostChar(char c) { return absl::ascii_isalnum(c) || c == '-' || c == '.'; }

// A DNS name or IPv4 address: labels of [a-z0-9-], none empty (so no leading, trailing or
// doubled dot).
bool ValidHostName(const std::string& host) {
  if (host.empty() || host.size() > 253) return false;
  for (char c : host) {
    if (!HostChar(c)) return false;
  }
  for (absl::string_view label : absl::StrSplit(host, '.')) {
    if (label.empty() || label.size() > 63) return false;
  }
  return true;
}

bool ValidIpv6Literal(const std::string& host) {  // "[...]"
  if (host.size() < 4 || host.front() != '[' || host.back() != ']') return false;
  for (size_t i = 1; i + 1 < host.size(); ++i) {
    if (!absl::ascii_isxdigit(host[i]) && host[i] != ':' && host[i] != '.') return false;
  }
  return true;
}

// True when `prefix` ("" or "/a/b") is `path` or a parent of it.
bool PathUnder(const std::string& path, const std::string& prefix) {
  if (prefix.empty() || path == prefix) return true;
  return absl::StartsWith(path, prefix) && path[prefix.size()] == '/';
}

}  // namespace

std::string EndpointUrl::ToString() const {
  return absl::StrCat(scheme, "://", host, ":", port, path);
}

absl::StatusOr<EndpointUrl> ParseEndpoint(const std::string& url) {
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      return Bad(url, "spaces, control and non-ASCII characters are not allowed");
    }
    if (c == '\\' || c == '%' || c == '?' || c == '#') {
      return Bad(url, absl::StrCat("'", std::string(1, c),
                                   "' is not allowed (no escapes, queries or fragments)"));
    }
  }
  EndpointUrl out;
  absl::string_view rest = url;
  const size_t colon = rest.find("://");
  if (colon == absl::string_view::npos) return Bad(url, "expected scheme://host[:port][/path]");
  out.scheme = absl::AsciiStrToLower(rest.substr(0, colon));
  if (out.scheme != "http" && out.scheme != "https") {
    return Bad(url, "the scheme must be http or https");
  }
  rest.remove_prefix(colon + 3);
  const size_t slash = rest.find('/');
  absl::string_view authority = rest.substr(0, slash);
  absl::string_view path =
      slash == absl::string_view::npos ? absl::string_view() : rest.substr(slash);
  if (absl::StrContains(authority, '@')) return Bad(url, "userinfo (user@host) is not allowed");
  absl::string_view port_text;
  if (absl::StartsWith(authority, "[")) {
    const size_t close = authority.find(']');
    if (close == absl::string_view::npos) return Bad(url, "unclosed IPv6 literal");
    out.host = std::string(authority.substr(0, close + 1));
    absl::string_view after = authority.substr(close + 1);
    if (!after.empty() && !absl::ConsumePrefix(&after, ":")) {
      return Bad(url, "junk after the IPv6 literal");
    }
    port_text = after;
    if (!ValidIpv6Literal(out.host)) return Bad(url, "malformed IPv6 literal");
  } else {
    const size_t port_colon = authority.find(':');
    out.host = std::string(authority.substr(0, port_colon));
    if (port_colon != absl::string_view::npos) {
      port_text = authority.substr(port_colon + 1);
      if (port_text.empty()) return Bad(url, "empty port");
    }
    out.host = absl::AsciiStrToLower(out.host);
    if (absl::EndsWith(out.host, ".")) return Bad(url, "the host must not end in '.'");
    if (!ValidHostName(out.host)) return Bad(url, "the host must be a DNS name or an IP address");
  }
  if (port_text.empty()) {
    out.port = out.scheme == "https" ? 443 : 80;
  } else {
    for (char c : port_text) {
      if (!absl::ascii_isdigit(c)) return Bad(url, "the port must be a number");
    }
    if (port_text.size() > 5 || !absl::SimpleAtoi(port_text, &out.port) || out.port < 1 ||
        out.port > 65535) {
      return Bad(url, "the port must be within 1..65535");
    }
  }
  while (absl::ConsumeSuffix(&path, "/")) {
  }
  for (absl::string_view segment : absl::StrSplit(path, '/')) {
    if (segment == "." || segment == "..") return Bad(url, "'.' and '..' path segments");
  }
  if (absl::StrContains(path, "//")) return Bad(url, "empty path segments");
  out.path = std::string(path);
  return out;
}

absl::StatusOr<EndpointAllowList> EndpointAllowList::Parse(const std::string& list) {
  EndpointAllowList out;
  for (absl::string_view entry : absl::StrSplit(list, ',')) {
    entry = absl::StripAsciiWhitespace(entry);
    if (entry.empty()) continue;
    if (absl::Status s = out.Add(std::string(entry)); !s.ok()) return s;
  }
  return out;
}

absl::Status EndpointAllowList::Add(const std::string& url) {
  absl::StatusOr<EndpointUrl> parsed = ParseEndpoint(url);
  if (!parsed.ok()) return parsed.status();
  for (const EndpointUrl& e : allowed_) {
    if (e == *parsed) return absl::OkStatus();
  }
  allowed_.push_back(*std::move(parsed));
  return absl::OkStatus();
}

bool EndpointAllowList::Allows(const std::string& url) const { return Check(url).ok(); }

absl::Status EndpointAllowList::Check(const std::string& url) const {
  absl::StatusOr<EndpointUrl> parsed = ParseEndpoint(url);
  if (!parsed.ok()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "llm.base_url is not an allowed LLM endpoint: ", parsed.status().message()));
  }
  for (const EndpointUrl& e : allowed_) {
    if (e.scheme == parsed->scheme && e.host == parsed->host && e.port == parsed->port &&
        PathUnder(parsed->path, e.path)) {
      return absl::OkStatus();
    }
  }
  return absl::PermissionDeniedError(
      absl::StrCat("llm.base_url \"", url, "\" is not an allowed LLM endpoint (allowed: ",
                   allowed_.empty() ? std::string("none") : ToString(),
                   "; the gateway's --allowed_base_urls)"));
}

std::string EndpointAllowList::ToString() const {
  return absl::StrJoin(allowed_, ",", [](std::string* out, const EndpointUrl& e) {
    absl::StrAppend(out, e.ToString());
  });
}

}  // namespace kforge::gateway
