#include "gpu_worker/eval/cpp_imports.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/base/files.h"

namespace kforge::eval {
namespace {

// LibTorch's two libraries and the C/C++ runtime, by soname (the dynamic loader aside).
constexpr const char* kAllowedSonames[] = {"libc10.so",   "libtorch_cpu.so", "libstdc++.so.6",
                                           "libc.so.6",   "libm.so.6",       "libgcc_s.so.1"};

// A file name up to ".so".
std::string Stem(const std::string& path) {
  std::string name = path.substr(path.rfind('/') + 1);
  return name.substr(0, name.find(".so"));
}

bool AllowedLibrary(const std::string& path) {
  if (path.empty()) return false;
  const std::string stem = Stem(path);
  for (const char* allowed : kAllowedSonames) {
    if (stem == Stem(allowed)) return true;
  }
  return stem.rfind("ld-linux", 0) == 0;
}

std::string LibraryOf(const void* address) {
  Dl_info info;
  return address && dladdr(address, &info) && info.dli_fname ? info.dli_fname : "";
}

// The allowed libraries as loaded in this process (by soname, without loading any).
const std::vector<void*>& AllowedHandles() {
  static const std::vector<void*> handles = [] {
    std::vector<void*> out;
    for (const char* soname : kAllowedSonames) {
      if (void* h = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD)) out.push_back(h);
    }
    return out;
  }();
  return handles;
}

// Whether `name`, bound in the global scope to something outside the allowed libraries, is
// still one of theirs: a data symbol the executable holds a copy of (a copy relocation), or
// an inline function another library carries a copy of too.
bool DefinedByAllowedLibrary(const std::string& name) {
  for (void* h : AllowedHandles()) {
    if (AllowedLibrary(LibraryOf(dlsym(h, name.c_str())))) return true;
  }
  return false;
}

// The undefined symbols (strong and weak) of an ELF64 shared object's .dynsym. Returns an error,
// empty on success.
std::string ReadImports(const std::string& elf, std::vector<std::string>* imports) {
  auto fits = [&](uint64_t offset, uint64_t size) {
    return offset <= elf.size() && size <= elf.size() - offset;
  };
  Elf64_Ehdr eh;
  if (!fits(0, sizeof eh)) return "not an ELF file";
  std::memcpy(&eh, elf.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr) ||
      !fits(eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr))) {
    return "not a 64-bit ELF shared object";
  }
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  std::memcpy(sections.data(), elf.data() + eh.e_shoff, eh.e_shnum * sizeof(Elf64_Shdr));
  for (const Elf64_Shdr& sh : sections) {
    if (sh.sh_type != SHT_DYNSYM) continue;
    if (sh.sh_entsize != sizeof(Elf64_Sym) || !fits(sh.sh_offset, sh.sh_size) ||
        sh.sh_link >= sections.size()) {
      return "malformed .dynsym";
    }
    const Elf64_Shdr& strtab = sections[sh.sh_link];
    if (!fits(strtab.sh_offset, strtab.sh_size)) return "malformed .dynstr";
    for (uint64_t i = 1; i < sh.sh_size / sizeof(Elf64_Sym); ++i) {
      Elf64_Sym sym;
      std::memcpy(&sym, elf.data() + sh.sh_offset + i * sizeof sym, sizeof sym);
      if (sym.st_shndx != SHN_UNDEF || sym.st_name == 0) continue;
      if (sym.st_name >= strtab.sh_size) return "malformed symbol name";
      const char* name = elf.data() + strtab.sh_offset + sym.st_name;
      size_t max_len = strtab.sh_size - sym.st_name;
      imports->push_back(std::string(name, strnlen(name, max_len)));
    }
  }
  return "";
}

}  // namespace

std::string Demangle(const std::string& symbol) {
  int status = 0;
  char* plain = abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && plain ? plain : symbol;
  std::free(plain);
  return out;
}

std::string CheckCandidateImports(const std::string& path) {
  std::vector<std::string> imports;
  if (std::string e = ReadImports(ReadFileOrEmpty(path), &imports); !e.empty()) {
    return "the candidate's shared object cannot be inspected (" + e + ")";
  }
  for (const std::string& name : imports) {
    void* address = dlsym(RTLD_DEFAULT, name.c_str());
    if (!address) continue;  // dlopen reports a missing strong symbol; a weak one stays null
    std::string library = LibraryOf(address);
    if (!AllowedLibrary(library) && !DefinedByAllowedLibrary(name)) {
      return "the candidate calls " + Demangle(name) + " from " +
             (library.empty() ? std::string("an unknown place") : library) +
             "; a cpp candidate may use LibTorch (libc10, libtorch_cpu) and the C/C++ runtime "
             "only";
    }
  }
  return "";
}

}  // namespace kforge::eval
