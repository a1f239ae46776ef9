#include "common/secrets.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace kforge {

absl::StatusOr<std::string> ReadSecretFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read the secret file ", path));
  std::stringstream buf;
  buf << in.rdbuf();
  std::string secret(absl::StripAsciiWhitespace(buf.str()));
  if (secret.empty()) return absl::InvalidArgumentError(absl::StrCat("the secret file ", path, " is empty"));
  return secret;
}

absl::StatusOr<std::string> SecretFromValueOrFile(const std::string& value,
                                                  const std::string& file) {
  if (file.empty()) return value;
  return ReadSecretFile(file);
}

bool SecretsEqual(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

absl::StatusOr<std::string> NewToken() {
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  unsigned char bytes[32];
  if (!urandom.read(reinterpret_cast<char*>(bytes), sizeof(bytes))) {
    return absl::InternalError("cannot read /dev/urandom");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "kf_";
  for (unsigned char b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

}  // namespace kforge
