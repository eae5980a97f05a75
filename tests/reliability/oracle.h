// Exact-arithmetic oracle of the reliability tests. With the workload of
// workload.h (SGD, learning rate 1, zeros init, sum aggregation, integer
// gradients) a parameter's value is exactly -(sum of the gradients applied
// to it), so the expected values of any set of pushes are computed exactly
// and compared for equality, no tolerance.
//
// Two levels:
//  - ExpectedValues / ExpectedAtClock + Compare: "does the state equal the
//    sum of exactly these steps?" (e.g. after a BSP run or checkpoint at
//    clock C: every step < C of every worker).
//  - Check: given the histories and the final values, explains the
//    difference between the final values and the acknowledged pushes as
//    lost, duplicated and unexpected pushes (see Check).
//
// Everything here is a pure function; safe to call from any thread.
#ifndef CAIRN_TESTS_RELIABILITY_ORACLE_H_
#define CAIRN_TESTS_RELIABILITY_ORACLE_H_

#include <compare>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/reliability/history.h"
#include "tests/reliability/workload.h"

namespace cairn::reliability {

// One worker's step: its pushes to every table of the workload.
struct StepId {
  int worker = 0;
  int64_t step = 0;
  auto operator<=>(const StepId&) const = default;
};

// One push: a worker's step on one table.
struct OpId {
  int worker = 0;
  int64_t step = 0;
  std::string table;
  auto operator<=>(const OpId&) const = default;
};

// The values of one table. Dense: `keys` empty, `values` the whole tensor
// (key i = element i), width 1. Sparse: `keys` sorted ascending and unique,
// `values` keys.size() * width floats, row-major; a key not listed holds
// zeros (the init), so either side of a comparison may list more keys.
struct TableValues {
  std::string table;
  bool sparse = false;
  int width = 1;
  std::vector<Key> keys;
  std::vector<float> values;
};

// Values of the workload's tables, by table name.
using JobValues = std::map<std::string, TableValues>;

// -(sum of the deltas of `ops`) for every table of the workload; an op
// listed n times counts n times. Sparse tables list the keys any op touched.
JobValues ExpectedValuesOfOps(const Workload& workload, const std::vector<OpId>& ops);

// -(sum of the deltas of `steps`), each step's pushes to all tables.
JobValues ExpectedValues(const Workload& workload, const std::set<StepId>& steps);

// The steps < `clock` of every worker in `workers`: what a BSP job holds
// after every worker completed `clock` iterations, and what a BSP checkpoint
// at clock `clock` must hold.
std::set<StepId> StepsBeforeClock(int64_t clock, const std::vector<int>& workers);
JobValues ExpectedAtClock(const Workload& workload, int64_t clock, const std::vector<int>& workers);

struct Mismatch {
  std::string table;
  Key key = 0;     // dense: element index; sparse: row key
  int column = 0;  // sparse: column in the row; dense: 0
  float expected = 0;
  float actual = 0;
};

struct Comparison {
  int64_t compared_keys = 0;    // dense elements + sparse rows compared
  int64_t mismatched_keys = 0;  // of those, with any element different
  std::vector<Mismatch> first;  // the first few different elements
  bool ok() const { return mismatched_keys == 0; }
  // "1000 keys compared, 3 differ; dense[17]: expected -4 got -2; ..."
  std::string ToString() const;
};

// Compares table by table with float equality (the values are small
// integers, exact in float32). A table present on one side only is compared
// against zeros; a dense size difference counts each missing element as a
// mismatch. Keeps the first `max_examples` mismatching elements.
Comparison Compare(const JobValues& expected, const JobValues& actual, int max_examples = 10);

// What Check found.
struct OracleReport {
  // Operations in the histories, by outcome.
  int64_t ok = 0;
  int64_t failed = 0;
  int64_t info = 0;
  // Records whose delta_checksum differs from the workload's recomputation
  // (the worker ran another workload, or the history is corrupt).
  int64_t checksum_mismatches = 0;

  // Attributed from final - expected(acknowledged ops):
  int64_t lost = 0;                   // acknowledged ops whose delta is missing
  int64_t duplicates = 0;             // ops (ok or info) whose delta is applied twice or more
  int64_t unexpected = 0;             // deltas applied though failed or never invoked
  int64_t info_applied = 0;           // info ops found applied once (allowed)
  std::vector<std::string> examples;  // first few, "lost: worker 1 step 7 table dense"

  // What attribution could not explain (e.g. a push applied on one server
  // but not another); ok() when everything was explained.
  Comparison unexplained;

  bool ok_all() const {
    return lost == 0 && duplicates == 0 && unexpected == 0 && checksum_mismatches == 0 &&
           unexplained.ok();
  }
  std::string ToString() const;
};

// Checks `final_values` against `history` (ReadHistoryDir).
//
// Algebra: r = final - ExpectedValuesOfOps(acknowledged ops). An op missing
// from the final state leaves r = +delta on its elements, an op applied in
// excess r = -delta. Attribution is greedy and exact per element: an op is
// taken as lost (or extra) when moving r by its delta reduces |r| by exactly
// |delta| on every element it touches. Candidates: acknowledged ops (lost,
// duplicates), info ops (info_applied, duplicates), failed ops and ops never
// invoked at steps 0 .. (a worker's highest recorded step + 1) (unexpected).
// Deltas are pseudo-random integers over many elements, so a false
// attribution needs many coincidences; what stays in r is `unexplained`.
// Workers are those that appear in the history.
OracleReport Check(const Workload& workload, const std::vector<HistoryRecord>& history,
                   const JobValues& final_values);

}  // namespace cairn::reliability

#endif  // CAIRN_TESTS_RELIABILITY_ORACLE_H_
