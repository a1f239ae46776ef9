#include "llm_gateway/completion_parser.h"

#include <algorithm>
#include <regex>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/dialect.h"

namespace kforge::gateway {
namespace {

struct CodeBlock {
  std::string language;  // lower-case first word of the info string; "" when untagged
  std::string code;
};

struct Fences {
  std::vector<CodeBlock> blocks;
  std::string outside;    // text outside every block
  bool unclosed = false;  // the last block has no closing fence
};

Fences SplitFences(const std::string& text) {
  Fences f;
  CodeBlock* open = nullptr;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    absl::string_view stripped = absl::StripAsciiWhitespace(line);
    if (open == nullptr && absl::StartsWith(stripped, "```")) {
      std::string info = absl::AsciiStrToLower(absl::StripAsciiWhitespace(stripped.substr(3)));
      f.blocks.push_back({info.substr(0, info.find_first_of(" \t{")), ""});
      open = &f.blocks.back();
    } else if (open != nullptr && stripped == "```") {
      open = nullptr;
    } else if (open != nullptr) {
      absl::StrAppend(&open->code, line, "\n");
    } else {
      absl::StrAppend(&f.outside, line, "\n");
    }
  }
  f.unclosed = open != nullptr;
  return f;
}

bool IsLanguageOf(const std::string& language, v1::Dialect dialect) {
  static const std::set<std::string> kPython = {"python", "py", "python3"};
  static const std::set<std::string> kCpp = {"cpp", "c++", "cxx", "cc", "cuda", "cu", "c"};
  return language.empty() || (dialect == v1::DIALECT_CPP ? kCpp : kPython).count(language) != 0;
}

std::string DescribeDialect(v1::Dialect d, const std::string& source) {
  if (d == v1::DIALECT_KERNELBENCH) {
    return source.find("load_inline") != std::string::npos
               ? "kernelbench (kernels through load_inline)"
               : "plain PyTorch without kforge.cuda kernels";
  }
  return DialectName(d);
}

}  // namespace

const char* CodeLanguage(v1::Dialect dialect) {
  return dialect == v1::DIALECT_CPP ? "cpp" : "python";
}

ParsedCompletion ParseCompletion(const std::string& text, v1::Dialect dialect,
                                 const std::string& finish_reason) {
  ParsedCompletion out;
  Fences fences = SplitFences(text);
  out.analysis = std::string(absl::StripAsciiWhitespace(fences.outside));
  const std::string language = CodeLanguage(dialect);
  const std::string truncated = finish_reason == "length" || finish_reason == "max_tokens"
                                    ? " (the reply was cut off at the token limit)"
                                    : "";
  if (fences.unclosed) {
    out.error = absl::StrCat("the reply's last code block is not closed with ```", truncated);
    return out;
  }
  std::vector<const CodeBlock*> code;
  std::vector<std::string> others;
  for (const CodeBlock& b : fences.blocks) {
    if (IsLanguageOf(b.language, dialect)) {
      code.push_back(&b);
    } else {
      others.push_back(b.language);
    }
  }
  const std::string dialect_name = DialectName(dialect);
  if (code.empty()) {
    out.error = absl::StrCat("no ```", language, " code block in the reply", truncated);
    if (!others.empty()) {
      absl::StrAppend(&out.error, " (it has blocks of: ", absl::StrJoin(others, ", "), "); a ",
                      dialect_name, " candidate is one complete ", language, " file");
    }
    return out;
  }
  if (code.size() > 1) {
    out.error = absl::StrCat("the reply has ", code.size(), " ", language,
                             " code blocks; exactly one complete candidate is expected");
    return out;
  }
  const std::string& source = code[0]->code;
  v1::Dialect found = InferDialect(source);
  if (found != dialect) {
    out.error = absl::StrCat("wrong dialect: a ", dialect_name, " candidate was asked for, but ",
                             "the code is ", DescribeDialect(found, source));
    return out;
  }
  if (dialect != v1::DIALECT_CPP &&
      !std::regex_search(source, std::regex(R"((^|\n)class\s+ModelNew\b)"))) {
    out.error = "the code defines no class ModelNew";
    return out;
  }
  out.source = source;
  return out;
}

std::vector<std::string> ParseIdeas(const std::string& text, size_t max_ideas) {
  static const std::regex kIdea(
      R"(^\s*(?:[-*]|\d+[.)])?\s*\**\s*idea\s*\d*\s*\**\s*:\s*\**\s*(.+)$)", std::regex::icase);
  static const std::regex kItem(R"(^(?:[-*]|\d+[.)])\s+(.+)$)");
  std::vector<std::string> tagged, items;
  for (absl::string_view view : absl::StrSplit(text, '\n')) {
    std::string line(absl::StripTrailingAsciiWhitespace(view));
    std::smatch m;
    if (std::regex_match(line, m, kIdea)) {
      tagged.push_back(std::string(absl::StripAsciiWhitespace(m[1].str())));
    } else if (std::regex_match(line, m, kItem)) {
      items.push_back(std::string(absl::StripAsciiWhitespace(m[1].str())));
    }
  }
  std::vector<std::string> ideas;
  std::set<std::string> seen;
  for (std::string& idea : tagged.empty() ? items : tagged) {
    if (ideas.size() >= max_ideas) break;
    if (!idea.empty() && seen.insert(idea).second) ideas.push_back(std::move(idea));
  }
  return ideas;
}

}  // namespace kforge::gateway
