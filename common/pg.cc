#include "common/pg.h"

#include <libpq-fe.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace kforge {

PgResult::PgResult(PGresult* res) : res_(res) {}
PgResult::~PgResult() {
  if (res_) PQclear(res_);
}
PgResult::PgResult(PgResult&& other) noexcept : res_(other.res_) { other.res_ = nullptr; }
PgResult& PgResult::operator=(PgResult&& other) noexcept {
  if (this != &other) {
    if (res_) PQclear(res_);
    res_ = other.res_;
    other.res_ = nullptr;
  }
  return *this;
}
int PgResult::rows() const { return PQntuples(res_); }
int PgResult::cols() const { return PQnfields(res_); }
int PgResult::col(const char* name) const { return PQfnumber(res_, name); }
bool PgResult::IsNull(int row, int col) const { return PQgetisnull(res_, row, col) != 0; }
std::string PgResult::Get(int row, int col) const {
  if (col < 0) return "";
  return std::string(PQgetvalue(res_, row, col), PQgetlength(res_, row, col));
}
int64_t PgResult::GetInt(int row, const char* name) const {
  return std::strtoll(Get(row, name).c_str(), nullptr, 10);
}
double PgResult::GetDouble(int row, const char* name) const {
  return std::strtod(Get(row, name).c_str(), nullptr);
}
int64_t PgResult::affected() const { return std::strtoll(PQcmdTuples(res_), nullptr, 10); }

absl::StatusOr<std::unique_ptr<PgConnection>> PgConnection::Connect(const std::string& url) {
  PGconn* conn = PQconnectdb(url.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(conn);
    PQfinish(conn);
    return absl::UnavailableError(absl::StrCat("cannot connect to PostgreSQL: ", msg));
  }
  // Notices (e.g. "relation already exists, skipping") are not errors; keep them off stderr.
  PQsetNoticeProcessor(conn, [](void*, const char*) {}, nullptr);
  return std::unique_ptr<PgConnection>(new PgConnection(conn));
}

PgConnection::~PgConnection() { PQfinish(conn_); }

bool PgConnection::healthy() const { return PQstatus(conn_) == CONNECTION_OK; }

bool PgConnection::CheckIdle() {
  // A closed connection shows as the server's last message (e.g. "terminating connection due
  // to administrator command") followed by end-of-file; each needs its own read.
  for (int i = 0; i < 3 && healthy(); ++i) {
    if (PQconsumeInput(conn_) == 0) break;
  }
  return healthy();
}

absl::Status PgConnection::Reset() {
  prepared_.clear();  // a new session has none
  PQreset(conn_);
  if (PQstatus(conn_) != CONNECTION_OK) {
    return absl::UnavailableError(
        absl::StrCat("cannot reconnect to PostgreSQL: ", PQerrorMessage(conn_)));
  }
  return absl::OkStatus();
}

absl::StatusOr<PgResult> PgConnection::Check(PGresult* raw) {
  PgResult res(raw);
  ExecStatusType st = raw ? PQresultStatus(raw) : PGRES_FATAL_ERROR;
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_EMPTY_QUERY) return res;
  std::string msg = raw ? PQresultErrorMessage(raw) : PQerrorMessage(conn_);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  if (PQstatus(conn_) != CONNECTION_OK) {
    return absl::UnavailableError(absl::StrCat("PostgreSQL connection lost: ", msg));
  }
  const char* state = raw ? PQresultErrorField(raw, PG_DIAG_SQLSTATE) : nullptr;
  std::string code = state ? state : "";
  absl::Status error;
  if (code == "23505") {
    error = absl::AlreadyExistsError(msg);
  } else if (code == "40001" || code == "40P01") {
    error = absl::AbortedError(msg);
  } else if (code.rfind("22", 0) == 0 || code.rfind("23", 0) == 0) {
    error = absl::InvalidArgumentError(msg);
  } else if (code.rfind("08", 0) == 0 || code == "57P01" || code == "57P02" ||
             code == "57P03") {
    return absl::UnavailableError(msg);
  } else {
    error = absl::InternalError(absl::StrCat("PostgreSQL error ", code, ": ", msg));
  }
  // PostgreSQL's text may quote the data (a source, a name): for the service's log only.
  error.SetPayload(kDatabaseErrorPayload, absl::Cord(code));
  return error;
}

namespace {

// libpq's view of the parameters: text values, NULL for SQL NULL.
std::vector<const char*> ParamValues(const PgParams& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  return values;
}

}  // namespace

absl::StatusOr<PgResult> PgConnection::Exec(const std::string& sql, const PgParams& params) {
  std::vector<const char*> values = ParamValues(params);
  PGresult* res = PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr,
                               values.data(), nullptr, nullptr, 0);
  return Check(res);
}

absl::StatusOr<PgResult> PgConnection::ExecPrepared(const std::string& sql,
                                                    const PgParams& params) {
  auto it = prepared_.find(sql);
  if (it == prepared_.end()) {
    std::string name = absl::StrCat("kforge_", prepared_.size());
    RETURN_IF_ERROR(
        Check(PQprepare(conn_, name.c_str(), sql.c_str(), static_cast<int>(params.size()), nullptr))
            .status());
    it = prepared_.emplace(sql, std::move(name)).first;
  }
  std::vector<const char*> values = ParamValues(params);
  PGresult* res = PQexecPrepared(conn_, it->second.c_str(), static_cast<int>(params.size()),
                                 values.data(), nullptr, nullptr, 0);
  return Check(res);
}

absl::Status PgConnection::ExecScript(const std::string& sql) {
  return Check(PQexec(conn_, sql.c_str())).status();
}

PgPool::Lease::~Lease() {
  if (pool_ && conn_) pool_->Return(std::move(conn_));
}

PgPool::PgPool(std::string url, int size) : url_(std::move(url)), size_(size) {}

absl::StatusOr<PgPool::Lease> PgPool::Acquire(std::chrono::milliseconds timeout) {
  std::unique_ptr<PgConnection> conn;
  {
    absl::MutexLock lock(&mu_);
    auto available = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return !idle_.empty() || open_ < size_;
    };
    if (!mu_.AwaitWithTimeout(absl::Condition(&available),
                              absl::Milliseconds(timeout.count()))) {
      return absl::DeadlineExceededError("no free PostgreSQL connection in the pool");
    }
    if (!idle_.empty()) {
      conn = std::move(idle_.back());
      idle_.pop_back();
    } else {
      ++open_;
    }
  }
  if (conn && !conn->CheckIdle()) {
    if (!conn->Reset().ok()) conn.reset();
  }
  if (!conn) {
    auto fresh = PgConnection::Connect(url_);
    if (!fresh.ok()) {
      absl::MutexLock lock(&mu_);
      --open_;
      return fresh.status();
    }
    conn = std::move(fresh).value();
  }
  return Lease(this, std::move(conn));
}

void PgPool::Return(std::unique_ptr<PgConnection> conn) {
  absl::MutexLock lock(&mu_);
  if (conn->healthy()) {
    idle_.push_back(std::move(conn));
  } else {
    --open_;  // dropped; a fresh one is opened on demand
  }
}

absl::StatusOr<PgResult> PgPool::Exec(const std::string& sql, const PgParams& params) {
  auto lease = Acquire();
  if (!lease.ok()) return lease.status();
  return (*lease)->Exec(sql, params);
}

absl::StatusOr<PgResult> PgPool::ExecPrepared(const std::string& sql, const PgParams& params) {
  auto lease = Acquire();
  if (!lease.ok()) return lease.status();
  return (*lease)->ExecPrepared(sql, params);
}

std::string PgTextArray(const std::vector<std::string>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ",";
    out += "\"";
    for (char c : items[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += "\"";
  }
  return out + "}";
}

bool IsRetryablePgError(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsAborted(status);
}

}  // namespace kforge
