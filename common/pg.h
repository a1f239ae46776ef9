// PostgreSQL access through libpq: results, connections and a pool with reconnect.
//
// Only the storage adapters (coordinator/store, migrations) include this header; business
// logic talks to interfaces that take plain C++ types.
//
// Thread-safety: a PgConnection is used by one thread at a time. PgPool is thread-safe; the
// connection a PgPool::Lease holds belongs to the lease's owner until the lease is destroyed.
#ifndef KFORGE_COMMON_PG_H_
#define KFORGE_COMMON_PG_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;

// SQL for a timestamptz column as RFC 3339 UTC with milliseconds ("2026-11-30T05:08:50.252Z"),
// the form every API field of type timestamp uses. A macro so that it can be joined with other
// string literals, also in constant expressions: KFORGE_PG_RFC3339("finished_at").
#define KFORGE_PG_RFC3339(column) \
  "to_char(" column " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

namespace kforge {

// The payload type URL on statuses made from PostgreSQL's errors (value: the SQLSTATE).
inline constexpr char kDatabaseErrorPayload[] = "type.kforge.dev/database_error";

// A query result (owning). Columns are addressed by index or name; values are text.
class PgResult {
 public:
  explicit PgResult(PGresult* res);
  ~PgResult();
  PgResult(PgResult&& other) noexcept;
  PgResult& operator=(PgResult&& other) noexcept;
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;

  int rows() const;
  int cols() const;
  // Column index by name; -1 when absent.
  int col(const char* name) const;
  bool IsNull(int row, int col) const;
  std::string Get(int row, int col) const;
  std::string Get(int row, const char* name) const { return Get(row, col(name)); }
  int64_t GetInt(int row, const char* name) const;
  double GetDouble(int row, const char* name) const;
  // Rows affected by INSERT/UPDATE/DELETE.
  int64_t affected() const;

 private:
  PGresult* res_;
};

using PgParams = std::vector<std::optional<std::string>>;  // nullopt is SQL NULL

class PgConnection {
 public:
  // Connects to `url` (a libpq connection string or postgresql:// URI).
  // UNAVAILABLE if the server cannot be reached.
  static absl::StatusOr<std::unique_ptr<PgConnection>> Connect(const std::string& url);
  ~PgConnection();

  // Runs one statement with text parameters ($1, $2...). Errors map to canonical codes:
  // UNAVAILABLE (connection lost), ALREADY_EXISTS (unique violation), ABORTED (serialization
  // failure, deadlock: retry the transaction), INVALID_ARGUMENT (bad data), INTERNAL (anything
  // else); the message carries PostgreSQL's own. Every error but UNAVAILABLE carries the
  // payload kDatabaseErrorPayload (the SQLSTATE), so that ToGrpcStatus (common/service.h)
  // keeps PostgreSQL's text, which may quote the data, out of what clients see.
  absl::StatusOr<PgResult> Exec(const std::string& sql, const PgParams& params = {});
  // The same, through a statement prepared on this connection the first time `sql` is run
  // on it: for hot statements, whose parse and plan would otherwise cost more than running
  // them. After five runs PostgreSQL may keep one generic plan, so parameters should not
  // change the best plan (write a LIMIT as a literal, not a parameter).
  absl::StatusOr<PgResult> ExecPrepared(const std::string& sql, const PgParams& params = {});
  // Runs a script of several statements (no parameters), e.g. a migration.
  absl::Status ExecScript(const std::string& sql);
  bool healthy() const;
  // Reads, without blocking, whatever the server sent while this connection sat idle, so that
  // a connection the server closed meanwhile (restart, pg_terminate_backend, idle timeout) is
  // found broken before a statement is sent on it. Returns healthy() afterwards.
  bool CheckIdle();
  // Re-establishes a broken connection.
  absl::Status Reset();

 private:
  explicit PgConnection(PGconn* conn) : conn_(conn) {}
  absl::StatusOr<PgResult> Check(PGresult* res);
  PGconn* conn_;
  std::unordered_map<std::string, std::string> prepared_;  // SQL -> statement name
};

// A fixed-size pool. Connections are opened lazily and reset when found broken, so a
// restarted database is picked up again without restarting the service.
class PgPool {
 public:
  class Lease {
   public:
    Lease(PgPool* pool, std::unique_ptr<PgConnection> conn)
        : pool_(pool), conn_(std::move(conn)) {}
    Lease(Lease&&) = default;
    ~Lease();
    PgConnection& operator*() { return *conn_; }
    PgConnection* operator->() { return conn_.get(); }

   private:
    PgPool* pool_;
    std::unique_ptr<PgConnection> conn_;
  };

  PgPool(std::string url, int size);
  // Waits up to `timeout` for a free connection; DEADLINE_EXCEEDED when none came, or
  // UNAVAILABLE when the database cannot be reached.
  absl::StatusOr<Lease> Acquire(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Convenience: one statement on a pooled connection.
  absl::StatusOr<PgResult> Exec(const std::string& sql, const PgParams& params = {});
  absl::StatusOr<PgResult> ExecPrepared(const std::string& sql, const PgParams& params = {});
  const std::string& url() const { return url_; }

 private:
  void Return(std::unique_ptr<PgConnection> conn);

  const std::string url_;
  const int size_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<PgConnection>> idle_ ABSL_GUARDED_BY(mu_);
  int open_ ABSL_GUARDED_BY(mu_) = 0;  // connections in existence (idle or leased)
};

// A text[] literal from plain strings (each quoted and escaped), for a `$n::text[]` parameter.
std::string PgTextArray(const std::vector<std::string>& items);

// True for errors after which retrying the whole transaction may succeed.
bool IsRetryablePgError(const absl::Status& status);

}  // namespace kforge

#endif  // KFORGE_COMMON_PG_H_
