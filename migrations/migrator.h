// Schema migrations: numbered SQL files (migrations/NNNN_name.sql) applied in order, each in
// its own transaction, recorded in schema_migrations with a checksum. Applying twice is a
// no-op; concurrent appliers serialise on an advisory lock; an applied migration whose text
// changed, or a database newer than this binary knows, is refused.
//
// Thread-safety: functions take the connection they use; one caller per connection.
#ifndef KFORGE_MIGRATIONS_MIGRATOR_H_
#define KFORGE_MIGRATIONS_MIGRATOR_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/pg.h"

namespace kforge {

struct Migration {
  int version;
  std::string name;
  std::string sql;
};

// The migrations compiled into this binary, by ascending version.
const std::vector<Migration>& EmbeddedMigrations();

// Applies every migration newer than the database's version. Returns how many were applied.
// FAILED_PRECONDITION if an applied migration's checksum differs or the database is newer.
absl::StatusOr<int> ApplyMigrations(PgConnection& conn, const std::vector<Migration>& all);

// The highest applied version (0 for an empty database).
absl::StatusOr<int> SchemaVersion(PgConnection& conn);

// OK when the database's version is exactly the newest of `all`; FAILED_PRECONDITION when it
// is newer (a newer kforge migrated it) or older (run the migrations first).
absl::Status CheckSchemaVersion(PgConnection& conn, const std::vector<Migration>& all);

}  // namespace kforge

#endif  // KFORGE_MIGRATIONS_MIGRATOR_H_
