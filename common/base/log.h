// Structured logging: one JSON object per line on stderr, e.g.
//   {"ts":"2026-11-30T00:00:00.123Z","level":"info","component":"worker",
//    "msg":"lease done","evaluation_id":"e-12","verdict":"ok"}
//
// Thread-safe: each line is written with one write(2). No dependencies beyond the standard
// library, so the engine uses it too.
#ifndef KFORGE_COMMON_BASE_LOG_H_
#define KFORGE_COMMON_BASE_LOG_H_

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace kforge {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Process-wide settings, set once at startup before threads start.
void SetLogComponent(std::string component);
void SetLogLevel(LogLevel level);
// Parses "debug", "info", "warning", "error"; returns false for anything else.
bool ParseLogLevel(std::string_view text, LogLevel* level);

using LogField = std::pair<std::string_view, std::string>;

void Log(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields = {});
inline void LogInfo(std::string_view msg, std::initializer_list<LogField> f = {}) {
  Log(LogLevel::kInfo, msg, f);
}
inline void LogWarning(std::string_view msg, std::initializer_list<LogField> f = {}) {
  Log(LogLevel::kWarning, msg, f);
}
inline void LogError(std::string_view msg, std::initializer_list<LogField> f = {}) {
  Log(LogLevel::kError, msg, f);
}

// Appends `s` to `out` as a JSON string literal (with quotes), escaping as JSON requires.
void AppendJsonString(std::string& out, std::string_view s);

}  // namespace kforge

#endif  // KFORGE_COMMON_BASE_LOG_H_
