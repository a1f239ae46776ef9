#include "common/result_json.h"

#include <google/protobuf/util/json_util.h>

#include <utility>
#include <vector>

namespace kforge {
namespace {

// (JSON key, proto enum name, word) for the enum-valued fields of EvalResult.
struct EnumWord {
  const char* key;
  const char* proto;
  const char* word;
};
constexpr EnumWord kEnumWords[] = {
    {"verdict", "VERDICT_UNSPECIFIED", "unspecified"},
    {"verdict", "VERDICT_OK", "ok"},
    {"verdict", "VERDICT_COMPILE_ERROR", "compile_error"},
    {"verdict", "VERDICT_RUNTIME_ERROR", "runtime_error"},
    {"verdict", "VERDICT_INCORRECT", "incorrect"},
    {"verdict", "VERDICT_TIMEOUT", "timeout"},
    {"verdict", "VERDICT_REJECTED", "rejected"},
    {"dialect", "DIALECT_UNSPECIFIED", "unspecified"},
    {"dialect", "DIALECT_KERNELBENCH", "kernelbench"},
    {"dialect", "DIALECT_NVRTC", "nvrtc"},
    {"dialect", "DIALECT_CPP", "cpp"},
};

std::string KeyValue(const char* key, const char* value, bool spaced) {
  return std::string("\"") + key + "\":" + (spaced ? " " : "") + "\"" + value + "\"";
}

void ReplaceAll(std::string& s, const std::string& from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
}

}  // namespace

const char* VerdictName(v1::Verdict v) {
  switch (v) {
    case v1::VERDICT_OK:
      return "ok";
    case v1::VERDICT_COMPILE_ERROR:
      return "compile_error";
    case v1::VERDICT_RUNTIME_ERROR:
      return "runtime_error";
    case v1::VERDICT_INCORRECT:
      return "incorrect";
    case v1::VERDICT_TIMEOUT:
      return "timeout";
    case v1::VERDICT_REJECTED:
      return "rejected";
    default:
      return "unspecified";
  }
}

v1::Verdict VerdictFromName(const std::string& name) {
  for (int v = v1::VERDICT_OK; v <= v1::VERDICT_REJECTED; ++v) {
    if (v1::Verdict_IsValid(v) && name == VerdictName(static_cast<v1::Verdict>(v))) {
      return static_cast<v1::Verdict>(v);
    }
  }
  return v1::VERDICT_UNSPECIFIED;
}

std::string ResultToJson(const v1::EvalResult& result) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.always_print_primitive_fields = true;
  opts.preserve_proto_field_names = true;
  opts.add_whitespace = true;
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(result, &json, opts);
  for (const EnumWord& e : kEnumWords) {
    ReplaceAll(json, KeyValue(e.key, e.proto, true), KeyValue(e.key, e.word, true));
  }
  if (!result.has_speedup()) {
    size_t brace = json.find('{');
    json.insert(brace + 1, "\n \"speedup\": null,");
  }
  return json;
}

bool ResultFromJson(const std::string& json, v1::EvalResult* result, std::string* error) {
  std::string s = json;
  for (const EnumWord& e : kEnumWords) {
    for (bool spaced : {true, false}) {
      ReplaceAll(s, KeyValue(e.key, e.word, spaced), KeyValue(e.key, e.proto, spaced));
    }
  }
  for (const char* null_speedup : {"\"speedup\": null,", "\"speedup\":null,"}) {
    ReplaceAll(s, null_speedup, "");
  }
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  auto st = google::protobuf::util::JsonStringToMessage(s, result, opts);
  if (!st.ok()) {
    *error = st.ToString();
    return false;
  }
  return true;
}

}  // namespace kforge
