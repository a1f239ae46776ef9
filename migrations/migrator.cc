#include "migrations/migrator.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "common/base/log.h"
#include "common/base/sha256.h"
#include "common/status_macros.h"

namespace kforge {
namespace {

// pg_advisory_lock key shared by every kforge process that migrates ("kforge" in ASCII).
constexpr char kLockKey[] = "107102111114103101";

constexpr char kCreateTable[] = R"sql(
CREATE TABLE IF NOT EXISTS schema_migrations (
  version     integer PRIMARY KEY,
  name        text NOT NULL,
  checksum    text NOT NULL,
  applied_at  timestamptz NOT NULL DEFAULT now()
))sql";

absl::StatusOr<std::map<int, std::string>> AppliedChecksums(PgConnection& conn) {
  ASSIGN_OR_RETURN(PgResult rows,
                   conn.Exec("SELECT version, checksum FROM schema_migrations ORDER BY version"));
  std::map<int, std::string> out;
  for (int i = 0; i < rows.rows(); ++i) {
    out[static_cast<int>(rows.GetInt(i, "version"))] = rows.Get(i, "checksum");
  }
  return out;
}

absl::Status ApplyLocked(PgConnection& conn, const std::vector<Migration>& all, int* applied) {
  RETURN_IF_ERROR(conn.Exec(kCreateTable).status());
  ASSIGN_OR_RETURN(auto done, AppliedChecksums(conn));
  int newest_known = all.empty() ? 0 : all.back().version;
  if (!done.empty() && done.rbegin()->first > newest_known) {
    return absl::FailedPreconditionError(absl::StrCat(
        "database schema is at version ", done.rbegin()->first, ", newer than this binary's ",
        newest_known, "; upgrade kforge"));
  }
  for (const Migration& m : all) {
    std::string checksum = Sha256Hex(m.sql);
    auto it = done.find(m.version);
    if (it != done.end()) {
      if (it->second != checksum) {
        return absl::FailedPreconditionError(absl::StrCat(
            "migration ", m.name, " was changed after it was applied (checksum ", it->second,
            " in the database, ", checksum, " here); add a new migration instead"));
      }
      continue;
    }
    RETURN_IF_ERROR(conn.Exec("BEGIN").status());
    absl::Status s = conn.ExecScript(m.sql);
    if (s.ok()) {
      s = conn.Exec("INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                    {std::to_string(m.version), m.name, checksum})
              .status();
    }
    if (s.ok()) s = conn.Exec("COMMIT").status();
    if (!s.ok()) {
      (void)conn.Exec("ROLLBACK");
      return absl::Status(s.code(), absl::StrCat("migration ", m.name, " failed: ", s.message()));
    }
    LogInfo("applied migration", {{"migration", m.name}});
    ++*applied;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int> ApplyMigrations(PgConnection& conn, const std::vector<Migration>& all) {
  RETURN_IF_ERROR(conn.Exec(absl::StrCat("SELECT pg_advisory_lock(", kLockKey, ")")).status());
  int applied = 0;
  absl::Status s = ApplyLocked(conn, all, &applied);
  absl::Status unlock =
      conn.Exec(absl::StrCat("SELECT pg_advisory_unlock(", kLockKey, ")")).status();
  RETURN_IF_ERROR(s);
  RETURN_IF_ERROR(unlock);
  return applied;
}

absl::StatusOr<int> SchemaVersion(PgConnection& conn) {
  ASSIGN_OR_RETURN(PgResult exists,
                   conn.Exec("SELECT to_regclass('schema_migrations') IS NOT NULL AS present"));
  if (exists.Get(0, "present") != "t") return 0;
  ASSIGN_OR_RETURN(PgResult rows,
                   conn.Exec("SELECT coalesce(max(version), 0) AS v FROM schema_migrations"));
  return static_cast<int>(rows.GetInt(0, "v"));
}

absl::Status CheckSchemaVersion(PgConnection& conn, const std::vector<Migration>& all) {
  ASSIGN_OR_RETURN(int version, SchemaVersion(conn));
  int newest_known = all.empty() ? 0 : all.back().version;
  if (version > newest_known) {
    return absl::FailedPreconditionError(absl::StrCat(
        "database schema is at version ", version, ", newer than this binary's ",
        newest_known, "; refusing to start (upgrade kforge)"));
  }
  if (version < newest_known) {
    return absl::FailedPreconditionError(absl::StrCat(
        "database schema is at version ", version, ", this binary needs ", newest_known,
        "; run the migrations (kforge-coordinator --migrate)"));
  }
  return absl::OkStatus();
}

}  // namespace kforge
