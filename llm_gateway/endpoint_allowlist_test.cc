#include "llm_gateway/endpoint_allowlist.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kforge::gateway {
namespace {

using ::testing::HasSubstr;

EndpointAllowList List(const std::string& text) {
  auto list = EndpointAllowList::Parse(text);
  EXPECT_TRUE(list.ok()) << list.status();
  return list.ok() ? *std::move(list) : EndpointAllowList();
}

// Which URLs one allow-list lets through, and which it refuses.
struct Case {
  const char* list;
  std::vector<const char*> allowed, refused;
};

void ExpectCase(const Case& c) {
  EndpointAllowList list = List(c.list);
  for (const char* url : c.allowed) EXPECT_TRUE(list.Allows(url)) << c.list << " / " << url;
  for (const char* url : c.refused) {
    absl::Status s = list.Check(url);
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << c.list << " / " << url;
  }
}

TEST(EndpointAllowListTest, SameOriginAndPathUnderThePrefix) {
  ExpectCase({"http://allowed.example:8000/v1, https://api.openai.com",
              {"http://allowed.example:8000/v1", "http://allowed.example:8000/v1/",
               "http://allowed.example:8000/v1/chat", "https://api.openai.com",
               "https://api.openai.com:443/", "https://api.openai.com/v1"},
              {}});
}

TEST(EndpointAllowListTest, UserinfoNeverNamesTheHost) {
  // libcurl connects to evil.example here; a string prefix match would say "allowed".
  absl::Status s = List("http://allowed.example").Check("http://allowed.example@evil.example/");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("userinfo"));
  ExpectCase({"http://allowed.example",
              {},
              {"http://user:pw@allowed.example/", "http://allowed.example:80@evil.example/"}});
}

TEST(EndpointAllowListTest, HostMustBeEqualNotAPrefix) {
  ExpectCase({"http://allowed.example",
              {},
              {"http://allowed.example.evil.example/", "http://allowed.examplex/",
               "http://sub.allowed.example/"}});
  absl::Status s = List("http://allowed.example").Check("http://allowed.example.evil.example/");
  EXPECT_THAT(s.message(), HasSubstr("is not an allowed LLM endpoint"));
  EXPECT_THAT(s.message(), HasSubstr("http://allowed.example:80"));
}

TEST(EndpointAllowListTest, PortAndSchemeMustMatch) {
  ExpectCase({"http://allowed.example:8000",
              {},
              {"http://allowed.example:8001/", "http://allowed.example/",
               "https://allowed.example:8000/"}});
  ExpectCase({"http://a.example", {"http://a.example:80"}, {"http://a.example:443"}});
}

TEST(EndpointAllowListTest, PathPrefixEndsAtASegmentBoundary) {
  ExpectCase({"https://gw.example/team/v1/",
              {"https://gw.example/team/v1", "https://gw.example/team/v1/x"},
              {"https://gw.example/team/v10", "https://gw.example/team",
               "https://gw.example/team/v1/../../other", "https://gw.example/team/v1/%2e%2e/other",
               "https://gw.example/team//v1"}});
}

TEST(EndpointAllowListTest, SchemeAndHostAreCaseInsensitivePathsAreNot) {
  ExpectCase({"http://allowed.example", {"HTTP://ALLOWED.Example/"}, {}});
  ExpectCase({"http://ALLOWED.EXAMPLE", {"http://allowed.example"}, {}});
  ExpectCase({"http://a.example/v1", {}, {"http://a.example/V1"}});
}

TEST(EndpointAllowListTest, TrailingDotsAndEmptyLabelsAreRefused) {
  EndpointAllowList list = List("http://allowed.example");
  absl::Status s = list.Check("http://allowed.example./");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("must not end in '.'"));
  EXPECT_FALSE(list.Allows("http://allowed..example/"));
  EXPECT_FALSE(list.Allows("http://.allowed.example/"));
  EXPECT_EQ(EndpointAllowList::Parse("http://allowed.example.").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(EndpointAllowListTest, MalformedUrlsAreRefused) {
  ExpectCase({"http://allowed.example",
              {},
              {"", "allowed.example", "ftp://allowed.example", "http://",
               "http://allowed.example:", "http://allowed.example:0",
               "http://allowed.example:65536", "http://allowed.example:80x",
               "http://allowed.example/?x=1", "http://allowed.example/#f",
               "http://allowed.example\\@evil.example", "http://allowed.example /",
               "http://allowed.ex%61mple/", "http://allowed_example/", "http://[::1/",
               "http://[zz]/", "http://allowed.example\n"}});
}

TEST(EndpointAllowListTest, Ipv6AndIpv4Literals) {
  ExpectCase({"http://[::1]:8000,http://127.0.0.1:9000",
              {"http://[::1]:8000/v1", "http://127.0.0.1:9000"},
              {"http://[::1]:8001/v1", "http://127.0.0.2:9000"}});
}

TEST(EndpointAllowListTest, ParseIsStrictAndNamesTheEntry) {
  auto bad = EndpointAllowList::Parse("http://ok.example, http://user@evil.example");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("http://user@evil.example"));
  EXPECT_THAT(bad.status().message(), HasSubstr("userinfo"));
  EndpointAllowList empty = List(" , ");
  EXPECT_EQ(empty.ToString(), "");
  EXPECT_THAT(std::string(empty.Check("http://a.example").message()), HasSubstr("allowed: none"));
}

}  // namespace
}  // namespace kforge::gateway
