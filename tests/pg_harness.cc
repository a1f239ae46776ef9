#include "tests/pg_harness.h"

#include <grp.h>
#include <sys/stat.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/subprocess.h"
#include "common/pg.h"
#include "common/secrets.h"
#include "common/status_macros.h"
#include "tests/loopback.h"

namespace kforge {
namespace {

constexpr char kDefaultBinDir[] = "/usr/lib/postgresql/15/bin";
constexpr char kSuperuser[] = "kforge";
constexpr double kCommandLimitS = 120;
// A free port can be taken by someone else between our probe and the server's bind.
constexpr int kStartAttempts = 5;

std::string TailOfFile(const std::string& path, size_t max_bytes) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  std::string s = buf.str();
  return s.size() > max_bytes ? s.substr(s.size() - max_bytes) : s;
}

bool IsValidDatabaseName(const std::string& name) {
  if (name.empty() || name.size() > 63) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// The environment's server; never destroyed at exit (TearDown stops it).
std::unique_ptr<PgTestServer>& SharedServer() {
  static auto* server = new std::unique_ptr<PgTestServer>();
  return *server;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PgTestServer>> PgTestServer::Start() {
  std::unique_ptr<PgTestServer> server(new PgTestServer());
  const char* bin_override = std::getenv("KFORGE_PG_BIN_DIR");
  server->bin_dir_ = bin_override && *bin_override ? bin_override : kDefaultBinDir;
  for (const char* tool : {"initdb", "pg_ctl", "postgres"}) {
    std::string path = absl::StrCat(server->bin_dir_, "/", tool);
    if (access(path.c_str(), X_OK) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, " not found: install postgresql-15 (scripts/setup.sh) or set KFORGE_PG_BIN_DIR"));
    }
  }

  if (geteuid() == 0) {
    // initdb and postgres refuse to run as root: the server belongs to an unprivileged user.
    const passwd* pw = getpwnam("postgres");
    if (pw == nullptr) pw = getpwnam("nobody");
    if (pw == nullptr) {
      return absl::FailedPreconditionError(
          "running as root and neither a 'postgres' nor a 'nobody' user exists");
    }
    server->drop_privileges_ = true;
    server->uid_ = pw->pw_uid;
    server->gid_ = pw->pw_gid;
  }

  // Under /tmp: the socket path must stay short, and the server's user must reach it.
  std::string templ = "/tmp/kforge-pg-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp: ", std::strerror(errno)));
  }
  server->dir_ = templ;
  if (server->drop_privileges_ && chown(server->dir_.c_str(), server->uid_, server->gid_) != 0) {
    return absl::InternalError(absl::StrCat("chown ", server->dir_, ": ", std::strerror(errno)));
  }

  // Password (SCRAM) authentication for every connection, local and TCP, as in a deployment:
  // the superuser's password is random, written for initdb to a file only the server's user
  // reads, and then kept only in the URLs this harness hands out.
  ASSIGN_OR_RETURN(std::string token, NewToken());
  server->password_ = token.substr(3);
  const std::string pwfile = server->dir_ + "/initdb.pw";
  std::ofstream(pwfile) << server->password_ << "\n";
  chmod(pwfile.c_str(), 0600);
  if (server->drop_privileges_ && chown(pwfile.c_str(), server->uid_, server->gid_) != 0) {
    return absl::InternalError(absl::StrCat("chown ", pwfile, ": ", std::strerror(errno)));
  }
  absl::Status initdb = server->RunAsServerUser(
      {server->bin_dir_ + "/initdb", "-D", server->dir_ + "/data", "-U", kSuperuser, "-A",
       "scram-sha-256", "--pwfile=" + pwfile, "-E", "UTF8", "--locale=C", "--no-sync",
       "--no-instructions"},
      kCommandLimitS);
  std::remove(pwfile.c_str());
  RETURN_IF_ERROR(initdb);

  absl::Status started;
  for (int attempt = 0; attempt < kStartAttempts; ++attempt) {
    ASSIGN_OR_RETURN(server->port_, UnusedLoopbackPort());
    started = server->StartServer();
    if (started.ok()) break;
  }
  RETURN_IF_ERROR(started);
  return server;
}

PgTestServer::~PgTestServer() {
  if (running_) {
    absl::Status s = RunAsServerUser(
        {bin_dir_ + "/pg_ctl", "stop", "-D", dir_ + "/data", "-m", "immediate", "-w", "-s"},
        kCommandLimitS);
    if (!s.ok())
      std::fprintf(stderr, "pg_harness: cannot stop the server: %s\n",
                   std::string(s.message()).c_str());
  }
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

absl::Status PgTestServer::RunAsServerUser(std::vector<std::string> argv, double limit_s) {
  SpawnOptions o;
  o.argv = std::move(argv);
  o.cwd = dir_;
  // A minimal environment: PG* variables of the caller must not redirect the server.
  o.inherit_env = false;
  o.env = {"PATH=/usr/bin:/bin", "LC_ALL=C", "LANG=C", "HOME=" + dir_};
  o.wall_limit_s = limit_s;
  if (drop_privileges_) {
    uid_t uid = uid_;
    gid_t gid = gid_;
    o.child_setup = [uid, gid] {
      return setgroups(0, nullptr) == 0 && setgid(gid) == 0 && setuid(uid) == 0;
    };
  }
  std::string command = absl::StrJoin(o.argv, " ");
  SubprocessResult r = RunSubprocess(std::move(o));
  if (r.Succeeded()) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(command, ": ", r.Describe(), "\n", r.stdout_data, r.stderr_data));
}

absl::Status PgTestServer::StartServer() {
  std::string options = absl::StrCat("-k ", dir_, " -h 127.0.0.1 -p ", port_,
                                     " -c fsync=off -c synchronous_commit=off"
                                     " -c full_page_writes=off");
  absl::Status s = RunAsServerUser({bin_dir_ + "/pg_ctl", "start", "-D", dir_ + "/data", "-l",
                                    dir_ + "/server.log", "-w", "-t", "60", "-s", "-o", options},
                                   kCommandLimitS);
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat(s.message(), "\nserver log:\n",
                                               TailOfFile(dir_ + "/server.log", 4000)));
  }
  running_ = true;
  return absl::OkStatus();
}

absl::Status PgTestServer::StopServer() {
  RETURN_IF_ERROR(RunAsServerUser(
      {bin_dir_ + "/pg_ctl", "stop", "-D", dir_ + "/data", "-m", "fast", "-w", "-s"},
      kCommandLimitS));
  running_ = false;
  return absl::OkStatus();
}

absl::Status PgTestServer::Restart() {
  RETURN_IF_ERROR(StopServer());
  return StartServer();
}

std::string PgTestServer::Url(const std::string& database) const {
  return absl::StrCat("postgresql://", kSuperuser, ":", password_, "@127.0.0.1:", port_, "/",
                      database);
}

absl::StatusOr<std::string> PgTestServer::CreateDatabase(const std::string& name) {
  if (!IsValidDatabaseName(name)) {
    return absl::InvalidArgumentError(absl::StrCat("bad database name '", name, "'"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> conn, PgConnection::Connect(Url("postgres")));
  // Replacing a database of that name keeps --gtest_repeat runs independent.
  RETURN_IF_ERROR(
      conn->Exec(absl::StrCat("DROP DATABASE IF EXISTS ", name, " WITH (FORCE)")).status());
  RETURN_IF_ERROR(conn->Exec(absl::StrCat("CREATE DATABASE ", name)).status());
  return Url(name);
}

void PgTestEnvironment::SetUp() {
  auto server = PgTestServer::Start();
  ASSERT_TRUE(server.ok()) << "cannot start the test PostgreSQL server: " << server.status();
  SharedServer() = std::move(server).value();
}

void PgTestEnvironment::TearDown() { SharedServer().reset(); }

PgTestServer& PgTestEnvironment::server() {
  PgTestServer* server = SharedServer().get();
  if (server == nullptr) {
    std::fprintf(stderr, "PgTestEnvironment::server() called outside the environment\n");
    std::abort();
  }
  return *server;
}

}  // namespace kforge
