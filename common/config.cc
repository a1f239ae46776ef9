#include "common/config.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "common/base/log.h"

ABSL_FLAG(std::string, log_level, "info", "debug, info, warning or error");

namespace kforge {

std::string EnvNameForFlag(const std::string& flag) {
  std::string out = "KFORGE_";
  for (char c : flag) out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  return out;
}

std::string ClientConfigPath() {
  if (const char* path = std::getenv("KFORGE_CONFIG"); path != nullptr && *path != '\0') {
    return path;
  }
  const char* home = std::getenv("HOME");
  if (home == nullptr) return "";
  std::string path = std::string(home) + "/.config/kforge/config";
  return std::ifstream(path).good() ? path : "";
}

void ApplyConfigFile(const std::string& path, const char* component) {
  if (path.empty()) return;
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "%s: cannot read the config file %s\n", component, path.c_str());
    std::exit(2);
  }
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text[0] == '#') continue;
    size_t eq = text.find('=');
    std::string name(absl::StripAsciiWhitespace(text.substr(0, eq)));
    if (eq == absl::string_view::npos || name.empty() ||
        absl::FindCommandLineFlag(name) == nullptr) {
      std::fprintf(stderr, "%s: %s:%d: want `flag = value` with a flag of %s, got '%s'\n",
                   component, path.c_str(), n, component, std::string(text).c_str());
      std::exit(2);
    }
    std::string value(absl::StripAsciiWhitespace(text.substr(eq + 1)));
    setenv(EnvNameForFlag(name).c_str(), value.c_str(), /*overwrite=*/0);
  }
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
