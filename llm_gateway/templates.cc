#include "llm_gateway/templates.h"

#include <dirent.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace kforge::gateway {

absl::StatusOr<TemplateSet> TemplateSet::Load(const std::string& override_dir) {
  std::map<std::string, std::string> files = EmbeddedTemplates();
  if (override_dir.empty()) return TemplateSet(std::move(files));
  DIR* dir = opendir(override_dir.c_str());
  if (dir == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot read templates directory ", override_dir));
  }
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    std::string path = override_dir + "/" + name;
    struct stat st;
    if (name[0] == '.' || stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    files[name] = text.str();
  }
  closedir(dir);
  return TemplateSet(std::move(files));
}

absl::StatusOr<std::string> TemplateSet::Render(
    const std::string& name, const std::map<std::string, std::string>& vars) const {
  auto file = files_.find(name);
  if (file == files_.end()) return absl::NotFoundError(absl::StrCat("no template ", name));
  const std::string& text = file->second;
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t open = text.find("{{", pos);
    if (open == std::string::npos) break;
    size_t close = text.find("}}", open + 2);
    if (close == std::string::npos) break;
    std::string key = text.substr(open + 2, close - open - 2);
    auto var = vars.find(key);
    if (var == vars.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("template ", name, " uses unknown placeholder {{", key, "}}"));
    }
    out.append(text, pos, open - pos);
    out += var->second;
    pos = close + 2;
  }
  out.append(text, pos, std::string::npos);
  return out;
}

}  // namespace kforge::gateway
