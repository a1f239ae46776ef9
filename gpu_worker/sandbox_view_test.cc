// PlanView against a fake filesystem: what the view binds, links, masks and leaves out.
#include "gpu_worker/sandbox_view.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kforge {
namespace {

using ::testing::HasSubstr;

// A host filesystem of paths: "d" a directory, "f" a file, "->x" a link to x.
class FakeProbe : public PathProbe {
 public:
  explicit FakeProbe(std::map<std::string, std::string> entries) : entries_(std::move(entries)) {}
  Kind Lstat(const std::string& path) const override {
    if (path == "/") return kDirectory;
    auto it = entries_.find(path);
    if (it == entries_.end()) return kMissing;
    if (it->second.rfind("->", 0) == 0) return kSymlink;
    return it->second == "d" ? kDirectory : kFile;
  }
  std::string ReadLink(const std::string& path) const override {
    return entries_.at(path).substr(2);
  }
  std::vector<std::string> List(const std::string& dir) const override {
    std::vector<std::string> names;
    for (const auto& [path, kind] : entries_) {
      if (path.rfind(dir + "/", 0) == 0 && path.find('/', dir.size() + 1) == std::string::npos) {
        names.push_back(path.substr(dir.size() + 1));
      }
    }
    return names;
  }

 private:
  std::map<std::string, std::string> entries_;
};

// A Debian-like host: merged /usr, CUDA through alternatives, a checkout whose .venv is a link.
FakeProbe Host() {
  return FakeProbe({{"/usr", "d"},
                    {"/usr/lib", "d"},
                    {"/usr/bin", "d"},
                    {"/usr/local", "d"},
                    {"/usr/local/cuda", "->/etc/alternatives/cuda"},
                    {"/usr/local/cuda-13.0", "d"},
                    {"/lib", "->usr/lib"},
                    {"/bin", "->usr/bin"},
                    {"/etc", "d"},
                    {"/etc/alternatives", "d"},
                    {"/etc/alternatives/cuda", "->/usr/local/cuda-13.0"},
                    {"/etc/shadow", "f"},
                    {"/etc/ssh", "d"},
                    {"/sys", "d"},
                    {"/tmp", "d"},
                    {"/tmp/kforge-sandbox-a", "d"},
                    {"/tmp/kforge-sandbox-b", "d"},
                    {"/tmp/kforge-cache", "d"},
                    {"/work", "d"},
                    {"/work/wt", "d"},
                    {"/work/wt/.venv", "->../main/.venv"},
                    {"/work/main", "d"},
                    {"/work/main/.venv", "d"},
                    {"/work/main/.venv/lib", "d"},
                    {"/work/main/README.md", "f"},
                    {"/dev", "d"},
                    {"/dev/null", "f"},
                    {"/dev/zero", "f"},
                    {"/dev/nvidia0", "f"},
                    {"/dev/nvidiactl", "f"},
                    {"/dev/sda", "f"}});
}

// One line per step: "bind ro /usr", "link /lib -> usr/lib", ...
std::vector<std::string> Describe(const std::vector<MountStep>& steps) {
  std::vector<std::string> out;
  for (const MountStep& s : steps) {
    switch (s.kind) {
      case MountStep::kTmpfs: out.push_back("tmpfs " + s.target + " " + s.data); break;
      case MountStep::kProc: out.push_back("proc " + s.target); break;
      case MountStep::kBind:
        out.push_back(std::string("bind ") + (s.device ? "dev" : s.writable ? "rw" : "ro") +
                      (s.is_dir ? " " : " file ") + s.target);
        EXPECT_EQ(s.source, s.target);
        break;
      case MountStep::kSymlink: out.push_back("link " + s.target + " -> " + s.source); break;
      case MountStep::kMaskDir: out.push_back("mask dir " + s.target); break;
      case MountStep::kMaskFile: out.push_back("mask file " + s.target); break;
    }
  }
  return out;
}

SandboxView TestView() {
  SandboxView v;
  v.read_only = {"/usr", "/bin", "/lib", "/lib64", "/etc", "/sys", "/usr/local/cuda",
                 "/work/wt/.venv/lib"};
  v.read_write = {"/tmp/kforge-cache"};
  v.devices = {"/dev/null", "/dev/zero", "/dev/random", "/dev/nvidia*"};
  v.masked = {"/etc/shadow", "/etc/ssh", "/etc/sudoers"};
  v.tmpfs_bytes = 4096;
  return v;
}

TEST(SandboxViewTest, PlansTheWholeViewInMountOrder) {
  auto steps = PlanView(TestView(), "/tmp/kforge-sandbox-a", Host());
  ASSERT_TRUE(steps.ok()) << steps.status();
  EXPECT_EQ(Describe(*steps),
            (std::vector<std::string>{
                "link /bin -> usr/bin",
                "tmpfs /dev mode=0755",
                "link /dev/fd -> /proc/self/fd",
                "bind dev file /dev/null",
                "bind dev file /dev/nvidia0",
                "bind dev file /dev/nvidiactl",
                "tmpfs /dev/shm mode=1777,size=4096",
                "link /dev/stderr -> /proc/self/fd/2",
                "link /dev/stdin -> /proc/self/fd/0",
                "link /dev/stdout -> /proc/self/fd/1",
                "bind dev file /dev/zero",
                "bind ro /etc",
                "mask file /etc/shadow",
                "mask dir /etc/ssh",
                "link /lib -> usr/lib",
                "proc /proc",
                "bind ro /sys",
                "tmpfs /tmp mode=1777,size=4096",
                "bind rw /tmp/kforge-cache",
                "bind rw /tmp/kforge-sandbox-a",
                "bind ro /usr",
                "bind ro /work/main/.venv/lib",
                "link /work/wt/.venv -> ../main/.venv",
            }));
}

TEST(SandboxViewTest, LeavesOutOtherScratchDirectoriesTheCheckoutAndHostTmp) {
  auto steps = PlanView(TestView(), "/tmp/kforge-sandbox-a", Host());
  ASSERT_TRUE(steps.ok()) << steps.status();
  for (const MountStep& s : *steps) {
    EXPECT_NE(s.target, "/tmp/kforge-sandbox-b");
    EXPECT_NE(s.target, "/work/main") << "the checkout itself is not bound";
    EXPECT_NE(s.target, "/dev/sda") << "only the listed devices";
    EXPECT_FALSE(s.kind == MountStep::kBind && s.source == "/tmp") << "the host's /tmp";
  }
}

TEST(SandboxViewTest, APathUnderABindWithOtherAccessIsBoundAgain) {
  SandboxView v = TestView();
  v.read_only = {"/work/main"};
  v.read_write = {"/work/main/.venv"};
  auto steps = PlanView(v, "/tmp/kforge-sandbox-a", Host());
  ASSERT_TRUE(steps.ok()) << steps.status();
  std::vector<std::string> d = Describe(*steps);
  EXPECT_THAT(d, ::testing::Contains("bind ro /work/main"));
  EXPECT_THAT(d, ::testing::Contains("bind rw /work/main/.venv"));
  // The same access adds nothing: /work/main/.venv/lib is shown by the bind above it.
  v.read_write = {};
  v.read_only = {"/work/main", "/work/main/.venv/lib"};
  auto again = PlanView(v, "/tmp/kforge-sandbox-a", Host());
  ASSERT_TRUE(again.ok());
  EXPECT_THAT(Describe(*again), ::testing::Not(::testing::Contains("bind ro /work/main/.venv/lib")));
}

TEST(SandboxViewTest, RefusesPathsThatWouldOpenTheViewUp) {
  for (const std::string& bad : {std::string("/"), std::string("relative"),
                                 std::string("/usr/../work"), std::string("/proc/1"),
                                 std::string("/dev"), std::string("/tmp")}) {
    SandboxView v = TestView();
    v.read_only.push_back(bad);
    auto steps = PlanView(v, "/tmp/kforge-sandbox-a", Host());
    EXPECT_EQ(steps.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(steps.status().message(), HasSubstr("'" + bad + "'"));
  }
  SandboxView v = TestView();
  v.devices = {"/etc/shadow"};
  EXPECT_THAT(PlanView(v, "/tmp/kforge-sandbox-a", Host()).status().message(),
              HasSubstr("a device not in /dev"));
}

TEST(SandboxViewTest, ExpandsPrefixPatterns) {
  EXPECT_EQ(ExpandPrefixPatterns({"/dev/nvidia*", "/dev/null", "/dev/none*"}, Host()),
            (std::vector<std::string>{"/dev/nvidia0", "/dev/nvidiactl", "/dev/null"}));
}

}  // namespace
}  // namespace kforge
