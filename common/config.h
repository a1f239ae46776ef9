// Configuration from flags and the environment. Every absl flag `--some_flag` may also be
// given as the environment variable KFORGE_SOME_FLAG; the command line wins over the
// environment, the environment over the flag's default. Containers are configured through the
// environment (helm/), developers through flags.
//
// Call once at the start of main, before any thread starts.
#ifndef KFORGE_COMMON_CONFIG_H_
#define KFORGE_COMMON_CONFIG_H_

#include <string>
#include <vector>

namespace kforge {

// Applies KFORGE_* environment variables to flags, then parses the command line (exiting
// with a usage message on an unknown flag or a bad value, as bad startup configuration
// should). Sets the log component to `component` and the log level from --log_level.
// Returns the positional arguments (argv[0] first).
std::vector<std::string> InitFromFlagsAndEnv(int argc, char** argv, const char* component,
                                             const char* usage);

// The environment variable that configures a flag: "database_url" -> "KFORGE_DATABASE_URL".
std::string EnvNameForFlag(const std::string& flag);

// The clients' config file: $KFORGE_CONFIG, else ~/.config/kforge/config when it exists; ""
// when there is none.
std::string ClientConfigPath();

// Reads `path` (lines `flag = value`, `#` comments) and sets KFORGE_<FLAG> for every flag the
// environment does not set already, so that the command line wins over the environment and
// the environment over the file. Exits with status 2 on an unreadable file, a malformed line
// or an unknown flag. Call before InitFromFlagsAndEnv; nothing happens for "".
void ApplyConfigFile(const std::string& path, const char* component);

}  // namespace kforge

#endif  // KFORGE_COMMON_CONFIG_H_
