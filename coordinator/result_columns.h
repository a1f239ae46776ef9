// The columns of `evaluations` that a worker's result fills besides the whole result (JSONB),
// as SQL text parameters: the verdict and its words, `speedup` and its medians, and both
// clocks (speedup per clock, the clock behind `speedup`, every median, the interval, the
// native-code taint, capped sampling). Where a column reads NULL is part of the schema
// (docs/architecture.md, "Both clocks"): a speedup only with `ok`, a median only for a program
// timed on that clock, an interval only when the engine gave one.
//
// Pure functions on a validated result (coordinator/result_validation.h); thread-safe.
#ifndef KFORGE_COORDINATOR_RESULT_COLUMNS_H_
#define KFORGE_COORDINATOR_RESULT_COLUMNS_H_

#include <optional>
#include <string>
#include <vector>

#include "kforge/v1/eval.pb.h"

namespace kforge {

struct ResultColumn {
  const char* name;                  // the column of `evaluations`
  const char* type;                  // the SQL type the text is cast to
  std::optional<std::string> value;  // nullopt: NULL
};

// Always the same columns in the same order, so a statement built from them is one statement.
std::vector<ResultColumn> ResultColumns(const v1::EvalResult& result);

// "name1 = $<first>::type1, name2 = $<first+1>::type2, ..." for ResultColumns.
std::string ResultColumnAssignments(int first_parameter);

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_RESULT_COLUMNS_H_
