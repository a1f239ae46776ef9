// RETURN_IF_ERROR / ASSIGN_OR_RETURN for absl::Status and absl::StatusOr (Abseil 20220623
// has neither).
//
//   RETURN_IF_ERROR(conn.Exec("BEGIN"));
//   ASSIGN_OR_RETURN(PgResult rows, conn.Exec(sql, params));
#ifndef KFORGE_COMMON_STATUS_MACROS_H_
#define KFORGE_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define KFORGE_CONCAT_INNER_(a, b) a##b
#define KFORGE_CONCAT_(a, b) KFORGE_CONCAT_INNER_(a, b)

#define RETURN_IF_ERROR(expr)                                 \
  do {                                                        \
    ::absl::Status kforge_status_ = (expr);                   \
    if (!kforge_status_.ok()) return kforge_status_;          \
  } while (0)

#define ASSIGN_OR_RETURN(lhs, expr) \
  KFORGE_ASSIGN_OR_RETURN_IMPL_(KFORGE_CONCAT_(kforge_statusor_, __LINE__), lhs, expr)

#define KFORGE_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return statusor.status();            \
  lhs = std::move(statusor).value()

#endif  // KFORGE_COMMON_STATUS_MACROS_H_
