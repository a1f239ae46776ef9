// Secrets (tokens, passwords) are read from files, never taken from flags: a command line is
// visible to every local user in /proc, and files can be mounted from a secret store.
//
// Thread-safe: pure functions over the file system.
#ifndef KFORGE_COMMON_SECRETS_H_
#define KFORGE_COMMON_SECRETS_H_

#include <string>

#include "absl/status/statusor.h"

namespace kforge {

// The file's content without surrounding whitespace. NOT_FOUND when it cannot be read,
// INVALID_ARGUMENT when it is empty. The content never appears in a message.
absl::StatusOr<std::string> ReadSecretFile(const std::string& path);

// A secret given directly (`value`, from a flag or KFORGE_* variable) or as a file: the
// file's content when `file` is set, else `value`.
absl::StatusOr<std::string> SecretFromValueOrFile(const std::string& value,
                                                  const std::string& file);

// Equal contents, compared in time independent of where they differ.
bool SecretsEqual(const std::string& a, const std::string& b);

// A fresh API token: "kf_" and 64 hex digits (256 bits from /dev/urandom).
absl::StatusOr<std::string> NewToken();

}  // namespace kforge

#endif  // KFORGE_COMMON_SECRETS_H_
