#include "common/config.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "common/base/log.h"

ABSL_FLAG(std::string, log_level, "info", "debug, info, warning or error");

namespace kforge {

std::string EnvNameForFlag(const std::string& flag) {
  std::string out = "KFORGE_";
  for (char c : flag) out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  return out;
}

std::vector<std::string> InitFromFlagsAndEnv(int argc, char** argv, const char* component,
                                             const char* usage) {
  absl::SetProgramUsageMessage(usage);
  for (auto& [name, flag] : absl::GetAllFlags()) {
    std::string env = EnvNameForFlag(std::string(name));
    const char* value = std::getenv(env.c_str());
    if (value == nullptr) continue;
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      std::fprintf(stderr, "%s: bad value for %s: %s\n", component, env.c_str(), error.c_str());
      std::exit(2);
    }
  }
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  SetLogComponent(component);
  LogLevel level;
  if (!ParseLogLevel(absl::GetFlag(FLAGS_log_level), &level)) {
    std::fprintf(stderr, "%s: bad --log_level %s\n", component,
                 absl::GetFlag(FLAGS_log_level).c_str());
    std::exit(2);
  }
  SetLogLevel(level);
  return {positional.begin(), positional.end()};
}

}  // namespace kforge
