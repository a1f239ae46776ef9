// migrations/ against a real PostgreSQL: the schema they create, idempotence, and the
// refusals (a newer database, an edited migration). Each test gets its own database.
#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/pg.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "migrations/migrator.h"
#include "tests/pg_harness.h"

namespace kforge {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsSupersetOf;

// gtest owns the environment.
::testing::Environment* const kPgEnvironment =
    ::testing::AddGlobalTestEnvironment(new PgTestEnvironment());

std::unique_ptr<PgConnection> ConnectToNewDatabase(const std::string& name) {
  auto url = PgTestEnvironment::server().CreateDatabase(name);
  EXPECT_TRUE(url.ok()) << url.status();
  if (!url.ok()) return nullptr;
  auto conn = PgConnection::Connect(*url);
  EXPECT_TRUE(conn.ok()) << conn.status();
  if (!conn.ok()) return nullptr;
  return std::move(conn).value();
}

std::set<std::string> Names(PgConnection& conn, const std::string& sql) {
  auto rows = conn.Exec(sql);
  EXPECT_TRUE(rows.ok()) << rows.status();
  std::set<std::string> out;
  if (!rows.ok()) return out;
  for (int i = 0; i < rows->rows(); ++i) out.insert(rows->Get(i, 0));
  return out;
}

// Every relation of the public schema with its oid (a dropped and re-created object gets a
// new one), its columns, and the migration records.
std::string SchemaSnapshot(PgConnection& conn) {
  auto rows = conn.Exec(R"sql(
    SELECT string_agg(c.relname || '/' || c.relkind::text || '/' || c.oid::text || '/' ||
                      coalesce((SELECT string_agg(a.attname || ':' || a.atttypid::text, ','
                                                  ORDER BY a.attnum)
                                FROM pg_attribute a
                                WHERE a.attrelid = c.oid AND a.attnum > 0), ''),
                      E'\n' ORDER BY c.relname) AS relations,
           (SELECT string_agg(version || '/' || name || '/' || checksum || '/' || applied_at,
                              E'\n' ORDER BY version)
            FROM schema_migrations) AS migrations
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public')sql");
  EXPECT_TRUE(rows.ok()) << rows.status();
  if (!rows.ok()) return "";
  return absl::StrCat(rows->Get(0, "relations"), "\n--\n", rows->Get(0, "migrations"));
}

int NewestVersion() { return EmbeddedMigrations().back().version; }

TEST(MigrationsTest, EmbedsNumberedMigrationsInOrder) {
  const auto& all = EmbeddedMigrations();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front().version, 1);
  for (size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1].version, all[i].version);
}

TEST(MigrationsTest, CreatesEveryTableAndView) {
  auto conn = ConnectToNewDatabase("creates_every_table");
  ASSERT_NE(conn, nullptr);
  auto applied = ApplyMigrations(*conn, EmbeddedMigrations());
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(*applied, static_cast<int>(EmbeddedMigrations().size()));

  EXPECT_THAT(
      Names(*conn,
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"),
      IsSupersetOf({"tasks", "jobs", "candidates", "job_candidates", "evaluations", "eval_queue",
                    "leases", "workers", "llm_calls", "batches", "schema_migrations"}));
  EXPECT_THAT(Names(*conn,
                    "SELECT table_name FROM information_schema.views "
                    "WHERE table_schema = 'public'"),
              IsSupersetOf({"best_per_task_gpu", "leaderboard", "job_trajectory",
                            "best_per_task_gpu_clock", "leaderboard_by_clock"}));
  EXPECT_THAT(Names(*conn,
                    "SELECT column_name FROM information_schema.columns "
                    "WHERE table_name = 'evaluations'"),
              IsSupersetOf({"speedup", "ref_median_ms", "cand_median_ms", "speedup_device",
                            "speedup_call", "speedup_clock", "reference_device_ms",
                            "candidate_device_ms", "reference_call_ms", "candidate_call_ms",
                            "speedup_ci_low", "speedup_ci_high", "native_code", "timing_capped"}));

  auto version = SchemaVersion(*conn);
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(*version, NewestVersion());
  absl::Status check = CheckSchemaVersion(*conn, EmbeddedMigrations());
  EXPECT_TRUE(check.ok()) << check;
}

TEST(MigrationsTest, ViewsAnswerOnAnEmptySchema) {
  auto conn = ConnectToNewDatabase("views_answer");
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(ApplyMigrations(*conn, EmbeddedMigrations()).ok());
  for (const char* view : {"best_per_task_gpu", "leaderboard", "job_trajectory",
                           "best_per_task_gpu_clock", "leaderboard_by_clock"}) {
    auto rows = conn->Exec(absl::StrCat("SELECT * FROM ", view));
    ASSERT_TRUE(rows.ok()) << view << ": " << rows.status();
    EXPECT_EQ(rows->rows(), 0) << view;
  }
}

// Three ok results of one task on one GPU type: `speedup` by the device clock (a, b) or the
// call clock (c, whose device clock was not trusted). The views rank by `speedup` as they did
// before the two clocks, and per clock by that clock's speedup.
TEST(MigrationsTest, ViewsRankByTheStoredSpeedupAndPerClock) {
  auto conn = ConnectToNewDatabase("views_per_clock");
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(ApplyMigrations(*conn, EmbeddedMigrations()).ok());
  absl::Status inserted = conn->ExecScript(R"sql(
    INSERT INTO tasks (task_id, name, source) VALUES ('t', 'relu', '');
    INSERT INTO candidates (candidate_id, source, dialect)
      VALUES ('a', '', 'nvrtc'), ('b', '', 'nvrtc'), ('c', '', 'nvrtc');
    INSERT INTO evaluations (candidate_id, task_id, gpu_type, ran_on_gpu_type, state, verdict,
                             speedup, speedup_clock, speedup_device, speedup_call,
                             reference_device_ms, candidate_device_ms, reference_call_ms,
                             candidate_call_ms, native_code, timing_capped)
      VALUES ('a', 't', 'H200', 'H200', 'done', 'ok', 2.0, 'device', 2.0, 1.2,
              1, 0.5, 1.2, 1, false, false),
             ('b', 't', 'H200', 'H200', 'done', 'ok', 1.5, 'device', 1.5, 1.4,
              1, 0.66, 1.4, 1, false, true),
             ('c', 't', 'H200', 'H200', 'done', 'ok', 1.8, 'call', NULL, 1.8,
              1, NULL, 1.8, 1, true, false))sql");
  ASSERT_TRUE(inserted.ok()) << inserted;
  EXPECT_THAT(Names(*conn,
                    "SELECT candidate_id || '/' || speedup || '/' || speedup_clock || '/' || "
                    "  speedup_call FROM best_per_task_gpu"),
              ElementsAre("a/2/device/1.2"));
  EXPECT_THAT(Names(*conn,
                    "SELECT clock || '/' || candidate_id || '/' || speedup || '/' || "
                    "  reference_ms || '/' || native_code::text FROM best_per_task_gpu_clock"),
              ElementsAre("call/c/1.8/1.8/true", "device/a/2/1/false"));
  EXPECT_THAT(Names(*conn,
                    "SELECT gpu_type || '/' || clock || '/' || tasks_solved || '/' || "
                    "  mean_speedup FROM leaderboard_by_clock"),
              ElementsAre("H200/call/1/1.8", "H200/device/1/2"));
  auto wrong = conn->Exec("UPDATE evaluations SET speedup_clock = 'wall' WHERE candidate_id = 'a'");
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(wrong.status().message()), HasSubstr("speedup_clock_check"));
}

TEST(MigrationsTest, SecondRunAppliesNothingAndChangesNothing) {
  auto conn = ConnectToNewDatabase("second_run");
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(ApplyMigrations(*conn, EmbeddedMigrations()).ok());
  std::string before = SchemaSnapshot(*conn);
  ASSERT_THAT(before, HasSubstr("tasks/r/"));

  auto again = ApplyMigrations(*conn, EmbeddedMigrations());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, 0);
  EXPECT_EQ(SchemaSnapshot(*conn), before);
}

// The Helm chart's coordinators migrate themselves (docs/decisions.md, "Kubernetes"): replicas
// that start at once after an upgrade apply each new migration once between them (the
// advisory lock serialises them; those after the first find nothing left to apply).
TEST(MigrationsTest, ReplicasStartingAtOnceApplyEachNewMigrationOnce) {
  auto url = PgTestEnvironment::server().CreateDatabase("replicas_at_once");
  ASSERT_TRUE(url.ok()) << url.status();
  const std::vector<Migration>& all = EmbeddedMigrations();
  ASSERT_GE(all.size(), 3u);
  const std::vector<Migration> previous(all.begin(), all.end() - 2);  // the release before
  auto first = PgConnection::Connect(*url);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(ApplyMigrations(**first, previous).ok());

  constexpr int kReplicas = 4;
  std::vector<std::unique_ptr<PgConnection>> conns;
  for (int i = 0; i < kReplicas; ++i) {
    auto conn = PgConnection::Connect(*url);
    ASSERT_TRUE(conn.ok()) << conn.status();
    conns.push_back(std::move(conn).value());
  }
  std::vector<absl::StatusOr<int>> applied(kReplicas, 0);
  std::atomic<int> ready{0};
  std::vector<std::thread> replicas;
  for (int i = 0; i < kReplicas; ++i) {
    replicas.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < kReplicas) std::this_thread::yield();
      applied[i] = ApplyMigrations(*conns[i], all);
    });
  }
  for (auto& t : replicas) t.join();
  int total = 0;
  for (const auto& a : applied) {
    ASSERT_TRUE(a.ok()) << a.status();
    total += *a;
  }
  EXPECT_EQ(total, 2);  // the two new migrations, once
  EXPECT_TRUE(CheckSchemaVersion(**first, all).ok());
  auto rows = (*first)->Exec("SELECT count(*) AS n, count(DISTINCT version) AS d "
                             "FROM schema_migrations");
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->Get(0, "n"), std::to_string(all.size()));
  EXPECT_EQ(rows->Get(0, "d"), std::to_string(all.size()));
}

TEST(MigrationsTest, EmptyDatabaseIsOlderThanTheBinary) {
  auto conn = ConnectToNewDatabase("empty_is_older");
  ASSERT_NE(conn, nullptr);
  auto version = SchemaVersion(*conn);
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(*version, 0);
  absl::Status check = CheckSchemaVersion(*conn, EmbeddedMigrations());
  EXPECT_EQ(check.code(), absl::StatusCode::kFailedPrecondition) << check;
  EXPECT_THAT(std::string(check.message()), HasSubstr("run the migrations"));
}

TEST(MigrationsTest, RefusesADatabaseNewerThanTheBinary) {
  auto conn = ConnectToNewDatabase("newer_database");
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(ApplyMigrations(*conn, EmbeddedMigrations()).ok());
  ASSERT_TRUE(conn->Exec("INSERT INTO schema_migrations (version, name, checksum) "
                         "VALUES (999, '0999_from_the_future', 'abc')")
                  .ok());

  absl::Status check = CheckSchemaVersion(*conn, EmbeddedMigrations());
  EXPECT_EQ(check.code(), absl::StatusCode::kFailedPrecondition) << check;
  EXPECT_THAT(std::string(check.message()), HasSubstr("version 999"));

  auto applied = ApplyMigrations(*conn, EmbeddedMigrations());
  EXPECT_EQ(applied.status().code(), absl::StatusCode::kFailedPrecondition) << applied.status();
  EXPECT_THAT(std::string(applied.status().message()), HasSubstr("version 999"));
}

TEST(MigrationsTest, RefusesAnAppliedMigrationWhoseTextChanged) {
  auto conn = ConnectToNewDatabase("changed_checksum");
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(ApplyMigrations(*conn, EmbeddedMigrations()).ok());
  std::string before = SchemaSnapshot(*conn);

  std::vector<Migration> edited = EmbeddedMigrations();
  edited.front().sql += "\n-- an edit after release\n";
  auto applied = ApplyMigrations(*conn, edited);
  EXPECT_EQ(applied.status().code(), absl::StatusCode::kFailedPrecondition) << applied.status();
  EXPECT_THAT(std::string(applied.status().message()),
              HasSubstr(absl::StrCat("migration ", edited.front().name, " was changed")));
  EXPECT_EQ(SchemaSnapshot(*conn), before);
}

TEST(MigrationsTest, AppliesOnlyTheMigrationsItLacks) {
  auto conn = ConnectToNewDatabase("applies_missing");
  ASSERT_NE(conn, nullptr);
  std::vector<Migration> extended = EmbeddedMigrations();
  extended.push_back({NewestVersion() + 1, "9999_test_extra",
                      "CREATE TABLE test_extra (id integer PRIMARY KEY);"});
  ASSERT_TRUE(ApplyMigrations(*conn, EmbeddedMigrations()).ok());

  auto applied = ApplyMigrations(*conn, extended);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(*applied, 1);
  EXPECT_TRUE(conn->Exec("SELECT * FROM test_extra").ok());
  auto version = SchemaVersion(*conn);
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(*version, NewestVersion() + 1);
}

TEST(MigrationsTest, AFailingMigrationIsRolledBackAndNamed) {
  auto conn = ConnectToNewDatabase("failing_migration");
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(ApplyMigrations(*conn, EmbeddedMigrations()).ok());
  std::vector<Migration> broken = EmbeddedMigrations();
  broken.push_back({NewestVersion() + 1, "9999_test_broken",
                    "CREATE TABLE half_done (id integer); SELECT * FROM no_such_table;"});

  auto applied = ApplyMigrations(*conn, broken);
  EXPECT_EQ(applied.status().code(), absl::StatusCode::kInternal) << applied.status();
  EXPECT_THAT(std::string(applied.status().message()),
              HasSubstr("migration 9999_test_broken failed"));
  EXPECT_THAT(std::string(applied.status().message()), HasSubstr("no_such_table"));
  auto half = conn->Exec("SELECT to_regclass('half_done') IS NULL AS absent");
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_EQ(half->Get(0, "absent"), "t");
  auto version = SchemaVersion(*conn);
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(*version, NewestVersion());
}

// Research roles (migration 0010): tenants A and B, the public space and rows no tenant owns,
// each with a task, a job and one ok evaluation; a job candidate's prompt per job.
class ResearchRolesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto url = PgTestEnvironment::server().CreateDatabase("research_roles");
    ASSERT_TRUE(url.ok()) << url.status();
    auto conn = PgConnection::Connect(*url);
    ASSERT_TRUE(conn.ok()) << conn.status();
    owner_ = std::move(conn).value();
    ASSERT_TRUE(ApplyMigrations(*owner_, EmbeddedMigrations()).ok());
    absl::Status inserted = owner_->ExecScript(R"sql(
      INSERT INTO tasks (task_id, name, source)
        SELECT 't_' || x, 'task_' || x, 'secret source ' || x
        FROM unnest(ARRAY['A', 'B', 'public', 'none']) x;
      INSERT INTO candidates (candidate_id, source, dialect)
        SELECT 'c_' || x, 'secret kernel ' || x, 'nvrtc'
        FROM unnest(ARRAY['A', 'B', 'public', 'none']) x;
      INSERT INTO jobs (job_id, task_id, gpu_types, strategy, tenant)
        SELECT ('00000000-0000-0000-0000-00000000000' || n)::uuid, 't_' || x, '{H200}',
               'contrastive', nullif(x, 'none')
        FROM unnest(ARRAY['A', 'B', 'public', 'none']) WITH ORDINALITY AS u(x, n);
      INSERT INTO job_candidates (job_id, candidate_id, round, prompt)
        SELECT job_id, 'c_' || coalesce(tenant, 'none'), 1, 'secret prompt' FROM jobs;
      INSERT INTO batches (batch_id, task_id, job_id, tenant)
        SELECT job_id, task_id, job_id, tenant FROM jobs;
      INSERT INTO evaluations (candidate_id, task_id, batch_id, job_id, gpu_type,
                               ran_on_gpu_type, state, verdict, speedup, speedup_clock,
                               speedup_call, tenant, finished_at)
        SELECT 'c_' || coalesce(tenant, 'none'), task_id, batch_id, job_id, 'H200', 'H200',
               'done', 'ok', 2.0, 'call', 2.0, tenant, now()
        FROM batches;)sql");
    ASSERT_TRUE(inserted.ok()) << inserted;
  }

  // Creates a research role of `tenant` and connects as it.
  std::unique_ptr<PgConnection> ConnectAsResearcher(const std::string& tenant) {
    auto made = owner_->Exec("SELECT * FROM kforge_create_research_role($1)", {tenant});
    EXPECT_TRUE(made.ok()) << made.status();
    if (!made.ok()) return nullptr;
    std::string role = made->Get(0, "role_name");
    EXPECT_THAT(role, ::testing::StartsWith("kforge_research_"));
    roles_.push_back(role);
    auto conn = PgConnection::Connect(
        absl::StrCat("postgresql://", role, ":", made->Get(0, "password"),
                     "@127.0.0.1:", PgTestEnvironment::server().port(), "/research_roles"));
    EXPECT_TRUE(conn.ok()) << conn.status();
    return conn.ok() ? std::move(conn).value() : nullptr;
  }

  // The view's rows, each as the tasks (or jobs) they are about.
  static std::set<std::string> Seen(PgConnection& conn, const std::string& column,
                                    const std::string& relation) {
    return Names(conn, absl::StrCat("SELECT ", column, "::text FROM ", relation));
  }

  std::unique_ptr<PgConnection> owner_;  // a superuser, as in the tests' coordinators
  std::vector<std::string> roles_;
};

TEST_F(ResearchRolesTest, EachTenantsRoleSeesItsOwnAndPublicRowsInEveryView) {
  for (const std::string& tenant : std::vector<std::string>{"A", "B"}) {
    SCOPED_TRACE(tenant);
    auto conn = ConnectAsResearcher(tenant);
    ASSERT_NE(conn, nullptr);
    const std::set<std::string> tasks = {"t_" + tenant, "t_public"};
    EXPECT_EQ(Seen(*conn, "task_id", "best_per_task_gpu"), tasks);
    EXPECT_EQ(Seen(*conn, "task_id", "best_per_task_gpu_clock"), tasks);
    EXPECT_THAT(Seen(*conn, "gpu_type || '/' || tasks_solved", "leaderboard"),
                ElementsAre("H200/2"));
    EXPECT_THAT(Seen(*conn, "clock || '/' || tasks_solved", "leaderboard_by_clock"),
                ElementsAre("call/2"));
    EXPECT_EQ(Seen(*conn, "job_id", "job_trajectory").size(), 2u);
    EXPECT_EQ(Seen(*conn, "coalesce(tenant, 'none')", "evaluations"),
              (std::set<std::string>{tenant, "public"}));
    EXPECT_EQ(Seen(*conn, "name", "tasks"),
              (std::set<std::string>{"task_" + tenant, "task_public"}));
    EXPECT_EQ(Seen(*conn, "round", "job_candidates"), (std::set<std::string>{"1"}));
    EXPECT_EQ(Names(*conn, "SELECT count(*)::text FROM job_candidates"),
              (std::set<std::string>{"2"}));
  }
}

TEST_F(ResearchRolesTest, ARoleReadsNoOtherTableAndWritesNothing) {
  auto conn = ConnectAsResearcher("A");
  ASSERT_NE(conn, nullptr);
  for (const char* sql :
       {"SELECT source FROM tasks", "SELECT prompt FROM job_candidates", "SELECT * FROM jobs",
        "SELECT * FROM batches", "SELECT * FROM candidates", "SELECT * FROM api_tokens",
        "SELECT * FROM audit_log", "SELECT * FROM eval_queue", "SELECT * FROM leases",
        "SELECT * FROM tenant_shares", "UPDATE evaluations SET speedup = 1000",
        "DELETE FROM evaluations", "INSERT INTO research_roles VALUES ('x', 'B')",
        "SELECT kforge_create_research_role('B')"}) {
    auto r = conn->Exec(sql);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal) << sql;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("42501")) << sql;
  }
  // Its own mapping row only.
  EXPECT_THAT(Names(*conn, "SELECT tenant FROM research_roles"), ElementsAre("A"));
}

TEST_F(ResearchRolesTest, TheCoordinatorsRoleStillSeesEverything) {
  ASSERT_NE(ConnectAsResearcher("A"), nullptr);
  EXPECT_EQ(Seen(*owner_, "task_id", "best_per_task_gpu"),
            (std::set<std::string>{"t_A", "t_B", "t_public", "t_none"}));
  EXPECT_EQ(Seen(*owner_, "job_id", "job_trajectory").size(), 4u);
  EXPECT_EQ(Seen(*owner_, "count(*)", "evaluations"), (std::set<std::string>{"4"}));
  // And still writes: row-level security does not bind the tables' owner.
  EXPECT_TRUE(owner_->Exec("UPDATE evaluations SET speedup = 3").ok());
  // A role that is neither owner nor research role (a dashboard's reader) is not filtered.
  ASSERT_TRUE(owner_
                  ->ExecScript("DROP ROLE IF EXISTS kforge_test_reader; "
                               "CREATE ROLE kforge_test_reader LOGIN PASSWORD 'reader-secret'; "
                               "GRANT SELECT ON best_per_task_gpu, evaluations, tasks "
                               "  TO kforge_test_reader")
                  .ok());
  auto reader =
      PgConnection::Connect(absl::StrCat("postgresql://kforge_test_reader:reader-secret@127.0.0.1:",
                                         PgTestEnvironment::server().port(), "/research_roles"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ(Seen(**reader, "task_id", "best_per_task_gpu").size(), 4u);
}

TEST_F(ResearchRolesTest, DroppedRoleIsGone) {
  ASSERT_NE(ConnectAsResearcher("B"), nullptr);
  auto dropped = owner_->Exec("SELECT kforge_drop_research_role($1)", {roles_.back()});
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_THAT(Names(*owner_, "SELECT count(*)::text FROM research_roles"), ElementsAre("0"));
  EXPECT_THAT(Names(*owner_, absl::StrCat("SELECT count(*)::text FROM pg_roles WHERE rolname = '",
                                          roles_.back(), "'")),
              ElementsAre("0"));
  auto unknown = owner_->Exec("SELECT kforge_drop_research_role('postgres')");
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("is not a research role"));
}

}  // namespace
}  // namespace kforge
