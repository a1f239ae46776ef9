#include "common/base/log.h"

#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <ctime>

namespace kforge {
namespace {

std::string& Component() {
  static std::string* c = new std::string("kforge");
  return *c;
}
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};

const char* LevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

}  // namespace

void SetLogComponent(std::string component) { Component() = std::move(component); }
void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }

bool ParseLogLevel(std::string_view text, LogLevel* level) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError}) {
    if (text == LevelName(l)) {
      *level = l;
      return true;
    }
  }
  return false;
}

void AppendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
}

void Log(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields) {
  if (static_cast<int>(level) < g_level.load()) return;
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  char ts[64];
  std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(tv.tv_usec / 1000));
  std::string line = "{\"ts\":\"";
  line += ts;
  line += "\",\"level\":\"";
  line += LevelName(level);
  line += "\",\"component\":";
  AppendJsonString(line, Component());
  line += ",\"msg\":";
  AppendJsonString(line, msg);
  for (const auto& [k, v] : fields) {
    line.push_back(',');
    AppendJsonString(line, k);
    line.push_back(':');
    AppendJsonString(line, v);
  }
  line += "}\n";
  (void)!write(2, line.data(), line.size());
}

}  // namespace kforge
