// A throwaway PostgreSQL 15 server for integration tests: initdb into a fresh temporary
// directory, postgres on a free loopback port (and a Unix socket in that directory), fsync
// off, password (SCRAM-SHA-256) authentication for the superuser "kforge", whose random
// password is part of the URLs the server hands out. Everything is stopped and deleted
// when the PgTestServer is destroyed.
//
// PostgreSQL refuses to run as root, so when the test runs as root the server's commands run
// as the "postgres" OS user (or "nobody" when there is none), which then owns the directory.
//
// One server per test binary: register PgTestEnvironment, then reach the server through
// PgTestEnvironment::server() and give each test its own database (CreateDatabase).
//
//   static auto* const kPg =
//       ::testing::AddGlobalTestEnvironment(new kforge::PgTestEnvironment());  // gtest owns it
//   TEST(Foo, Bar) {
//     auto url = kforge::PgTestEnvironment::server().CreateDatabase("foo_bar");
//     ASSERT_TRUE(url.ok()) << url.status();
//   }
//
// Thread-safety: a PgTestServer is used by one thread at a time (CreateDatabase, Restart);
// the URLs it hands out may be used from any thread or process.
#ifndef KFORGE_TESTS_PG_HARNESS_H_
#define KFORGE_TESTS_PG_HARNESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace kforge {

class PgTestServer {
 public:
  // Creates the cluster and starts the server. FAILED_PRECONDITION when the PostgreSQL 15
  // binaries are missing, INTERNAL (with the command's output) when a step fails.
  static absl::StatusOr<std::unique_ptr<PgTestServer>> Start();
  ~PgTestServer();
  PgTestServer(const PgTestServer&) = delete;
  PgTestServer& operator=(const PgTestServer&) = delete;

  // Creates an empty database (name: lower-case letters, digits, '_'), replacing one of the
  // same name, and returns its URL.
  absl::StatusOr<std::string> CreateDatabase(const std::string& name);
  // postgresql://kforge:PASSWORD@127.0.0.1:PORT/<database>
  std::string Url(const std::string& database) const;
  // Stops the server (fast shutdown: open connections are terminated) and starts it again on
  // the same port and directory.
  absl::Status Restart();

  int port() const { return port_; }
  const std::string& dir() const { return dir_; }

 private:
  PgTestServer() = default;
  // Runs a PostgreSQL command as the server's OS user; INTERNAL with its output on failure.
  absl::Status RunAsServerUser(std::vector<std::string> argv, double limit_s);
  absl::Status StartServer();
  absl::Status StopServer();

  std::string bin_dir_;  // PostgreSQL's binaries
  std::string dir_;      // the temporary directory: data/, server.log, the socket
  int port_ = 0;
  bool running_ = false;
  bool drop_privileges_ = false;  // true when the caller is root
  std::string password_;          // the superuser's
  uid_t uid_ = 0;
  gid_t gid_ = 0;
};

// Starts one PgTestServer for the whole test binary (SetUp) and stops it (TearDown).
// A failure to start is a fatal failure of the global set-up, so no test runs.
class PgTestEnvironment : public ::testing::Environment {
 public:
  void SetUp() override;
  void TearDown() override;
  // The running server; only valid between SetUp and TearDown.
  static PgTestServer& server();
};

}  // namespace kforge

#endif  // KFORGE_TESTS_PG_HARNESS_H_
