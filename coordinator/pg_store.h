// The coordinator's PostgreSQL adapter: every read and write of durable state goes through
// here, in plain C++ types. Business logic depends on this class's methods, never on libpq.
//
// Thread-safe: each call takes a connection from the pool for its own duration.
#ifndef KFORGE_COORDINATOR_PG_STORE_H_
#define KFORGE_COORDINATOR_PG_STORE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/pg.h"

namespace kforge {

struct StoredTask {
  std::string task_id;  // sha256 of the source
  bool created = false; // false when it was already stored
};

struct WorkerRow {
  std::string worker_id;
  std::string hostname;
  std::string gpu_type;
  int slots = 0;
  std::string last_heartbeat;  // RFC 3339
  bool alive = false;          // heartbeat within the liveness window
  int leases_held = 0;
  std::string token_id;  // the token it registered with; "" when none
  bool drained = false;  // drained by an operator: no new leases (migration 0008)
  std::string drained_by, drained_at;  // the operator and when (RFC 3339); "" when not drained
};

// What SetDrained changed.
struct DrainChange {
  WorkerRow worker;          // after the change
  bool was_drained = false;  // before it
};

class PgStore {
 public:
  explicit PgStore(PgPool& pool) : pool_(pool) {}

  // Inserts the task unless a task with the same content exists.
  absl::StatusOr<StoredTask> PutTask(const std::string& name, const std::string& source,
                                     const std::string& options_json);
  // Records a worker bound to the token it registered with ("" when authentication is off);
  // returns its id.
  absl::StatusOr<std::string> RegisterWorker(const std::string& hostname,
                                             const std::string& gpu_type, int slots,
                                             const std::string& facts_json,
                                             const std::string& token_id);
  // NOT_FOUND for an unknown id (the worker must register again).
  absl::StatusOr<WorkerRow> GetWorker(const std::string& worker_id);
  // Every GPU type a worker ever registered with (gone workers included: a pool scaled to
  // zero still receives work) that is a valid name (IsGpuTypeName, task_validation.h).
  absl::StatusOr<std::vector<std::string>> RegisteredGpuTypes();
  // Workers that heartbeated within `alive_window_s`, and the others still marked active.
  absl::StatusOr<std::vector<WorkerRow>> ListWorkers(double alive_window_s);
  // Drains (`drained`) or undrains worker `worker_id` on behalf of `principal`: a drained
  // worker is leased nothing more (queue_store.h) by any coordinator; draining a drained worker
  // keeps who drained it first. NOT_FOUND for an unknown worker or one that is gone.
  absl::StatusOr<DrainChange> SetDrained(const std::string& worker_id, bool drained,
                                         const std::string& principal);

 private:
  PgPool& pool_;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_PG_STORE_H_
