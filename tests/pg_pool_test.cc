// common/pg.h against a real PostgreSQL: queries, error codes, and a pool that survives a
// database restart.
#include <string>

#include "common/pg.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/pg_harness.h"

namespace kforge {
namespace {

using ::testing::HasSubstr;

// gtest owns the environment.
::testing::Environment* const kPgEnvironment =
    ::testing::AddGlobalTestEnvironment(new PgTestEnvironment());

std::string NewDatabase(const std::string& name) {
  auto url = PgTestEnvironment::server().CreateDatabase(name);
  EXPECT_TRUE(url.ok()) << url.status();
  return url.ok() ? *url : "";
}

TEST(PgConnectionTest, RunsParameterisedQueries) {
  auto conn = PgConnection::Connect(NewDatabase("parameterised"));
  ASSERT_TRUE(conn.ok()) << conn.status();
  auto rows =
      (*conn)->Exec("SELECT $1::int + 1 AS n, $2::text IS NULL AS missing", {"41", std::nullopt});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->GetInt(0, "n"), 42);
  EXPECT_EQ(rows->Get(0, "missing"), "t");
}

TEST(PgConnectionTest, MapsPostgresErrorsToCanonicalCodes) {
  auto conn = PgConnection::Connect(NewDatabase("error_codes"));
  ASSERT_TRUE(conn.ok()) << conn.status();
  ASSERT_TRUE(
      (*conn)->ExecScript("CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1);").ok());

  auto duplicate = (*conn)->Exec("INSERT INTO t VALUES (1)");
  EXPECT_EQ(duplicate.status().code(), absl::StatusCode::kAlreadyExists) << duplicate.status();
  auto bad_data = (*conn)->Exec("SELECT 'x'::int");
  EXPECT_EQ(bad_data.status().code(), absl::StatusCode::kInvalidArgument) << bad_data.status();
  auto bad_sql = (*conn)->Exec("SELECT * FROM no_such_table");
  EXPECT_EQ(bad_sql.status().code(), absl::StatusCode::kInternal) << bad_sql.status();
  EXPECT_THAT(std::string(bad_sql.status().message()), HasSubstr("no_such_table"));
}

TEST(PgConnectionTest, UnreachableServerIsUnavailable) {
  // Port 1 on loopback: nothing listens there, the connection is refused at once.
  auto conn = PgConnection::Connect("postgresql://kforge@127.0.0.1:1/none?connect_timeout=5");
  EXPECT_EQ(conn.status().code(), absl::StatusCode::kUnavailable) << conn.status();
}

TEST(PgPoolTest, ReconnectsAfterTheServerRestarts) {
  PgPool pool(NewDatabase("pool_restart"), 2);
  auto before = pool.Exec("SELECT pg_backend_pid() AS pid");
  ASSERT_TRUE(before.ok()) << before.status();

  absl::Status restarted = PgTestEnvironment::server().Restart();
  ASSERT_TRUE(restarted.ok()) << restarted;

  auto after = pool.Exec("SELECT pg_backend_pid() AS pid");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_NE(after->Get(0, "pid"), before->Get(0, "pid"));
  auto again = pool.Exec("SELECT 1 AS one");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->Get(0, "one"), "1");
}

TEST(PgPoolTest, AcquireTimesOutWhenEveryConnectionIsLeased) {
  PgPool pool(NewDatabase("pool_exhausted"), 1);
  auto held = pool.Acquire();
  ASSERT_TRUE(held.ok()) << held.status();
  auto second = pool.Acquire(std::chrono::milliseconds(50));
  EXPECT_EQ(second.status().code(), absl::StatusCode::kDeadlineExceeded) << second.status();
}

}  // namespace
}  // namespace kforge
