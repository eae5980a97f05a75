#include "tests/reliability/oracle.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace cairn::reliability {
namespace {

constexpr int kMaxExamples = 10;
// Dense tables: attribution correlates over at most this many elements
// (evenly spaced); subtraction and the final comparison use all of them.
constexpr int64_t kDenseSample = 8192;

// Integer sums of one table's deltas.
struct Sums {
  bool sparse = false;
  int width = 1;
  std::vector<int64_t> dense;
  std::map<Key, std::vector<int64_t>> rows;
};

void AddDelta(const TableDelta& delta, int64_t times, Sums* sums) {
  if (!delta.sparse) {
    for (size_t i = 0; i < delta.values.size(); ++i) {
      sums->dense[i] += times * static_cast<int64_t>(delta.values[i]);
    }
    return;
  }
  for (size_t r = 0; r < delta.keys.size(); ++r) {
    std::vector<int64_t>& row = sums->rows[delta.keys[r]];
    row.resize(sums->width, 0);
    for (int c = 0; c < sums->width; ++c) {
      row[c] += times * static_cast<int64_t>(delta.values[r * sums->width + c]);
    }
  }
}

std::map<std::string, Sums> EmptySums(const Workload& workload) {
  std::map<std::string, Sums> sums;
  if (!workload.dense_table.empty()) {
    sums[workload.dense_table].dense.assign(workload.dense_size, 0);
  }
  if (!workload.sparse_table.empty()) {
    Sums& s = sums[workload.sparse_table];
    s.sparse = true;
    s.width = workload.sparse_width;
  }
  return sums;
}

// The table's element `column` of `key`, or 0 when absent.
float ValueAt(const TableValues& t, size_t row, int column) {
  const size_t i = row * t.width + column;
  return i < t.values.size() ? t.values[i] : 0.0f;
}

void CompareTable(const std::string& name, const TableValues* expected, const TableValues* actual,
                  int max_examples, Comparison* out) {
  const TableValues empty;
  const TableValues& e = expected != nullptr ? *expected : empty;
  const TableValues& a = actual != nullptr ? *actual : empty;
  const bool sparse =
      (expected != nullptr && expected->sparse) || (actual != nullptr && actual->sparse);
  auto note = [&](Key key, int column, float ev, float av) {
    if (static_cast<int>(out->first.size()) < max_examples) {
      out->first.push_back(Mismatch{name, key, column, ev, av});
    }
  };
  if (!sparse) {
    const size_t n = std::max(e.values.size(), a.values.size());
    for (size_t i = 0; i < n; ++i) {
      ++out->compared_keys;
      const bool in_both = i < e.values.size() && i < a.values.size();
      const float ev = i < e.values.size() ? e.values[i] : 0.0f;
      const float av = i < a.values.size() ? a.values[i] : 0.0f;
      if (!in_both || ev != av) {
        ++out->mismatched_keys;
        note(i, 0, ev, av);
      }
    }
    return;
  }
  const int width = std::max(e.width, a.width);
  std::map<Key, std::pair<int64_t, int64_t>> rows;  // key -> (row in e, row in a), -1: absent
  for (size_t r = 0; r < e.keys.size(); ++r) rows[e.keys[r]] = {static_cast<int64_t>(r), -1};
  for (size_t r = 0; r < a.keys.size(); ++r) {
    auto [it, inserted] = rows.try_emplace(a.keys[r], -1, static_cast<int64_t>(r));
    if (!inserted) it->second.second = static_cast<int64_t>(r);
  }
  for (const auto& [key, where] : rows) {
    ++out->compared_keys;
    bool differs = false;
    for (int c = 0; c < width; ++c) {
      const float ev = where.first >= 0 && c < e.width ? ValueAt(e, where.first, c) : 0.0f;
      const float av = where.second >= 0 && c < a.width ? ValueAt(a, where.second, c) : 0.0f;
      if (ev != av) {
        if (!differs) note(key, c, ev, av);
        differs = true;
      }
    }
    if (differs) ++out->mismatched_keys;
  }
}

// One distinct op of the attribution: its history counts and the fitted
// coefficient c (r = sum c * delta; applied = ok - c).
struct Candidate {
  OpId op;
  int64_t ok = 0;
  int64_t info = 0;
  int64_t failed = 0;
  int64_t coefficient = 0;
};

// final - expected of one table, as doubles (a wrong final value need not
// be an integer).
struct Residual {
  bool sparse = false;
  int width = 1;
  std::vector<double> dense;
  std::unordered_map<Key, std::vector<double>> rows;
  bool zero() const {
    for (double v : dense) {
      if (v != 0) return false;
    }
    for (const auto& [key, row] : rows) {
      for (double v : row) {
        if (v != 0) return false;
      }
    }
    return true;
  }
};

Residual MakeResidual(const Workload& workload, const std::string& table, const Sums& acked,
                      const TableValues* final_table) {
  Residual r;
  r.sparse = acked.sparse;
  r.width = acked.width;
  if (!r.sparse) {
    r.dense.resize(workload.dense_size);
    for (int64_t i = 0; i < workload.dense_size; ++i) {
      const double f =
          final_table != nullptr && i < static_cast<int64_t>(final_table->values.size())
              ? final_table->values[i]
              : 0.0;
      r.dense[i] = f + static_cast<double>(acked.dense[i]);  // final - (-sum)
    }
    return r;
  }
  for (const auto& [key, sums] : acked.rows) {
    std::vector<double>& row = r.rows[key];
    row.assign(r.width, 0.0);
    for (int c = 0; c < r.width; ++c) row[c] = static_cast<double>(sums[c]);
  }
  if (final_table != nullptr) {
    for (size_t k = 0; k < final_table->keys.size(); ++k) {
      std::vector<double>& row = r.rows[final_table->keys[k]];
      row.resize(r.width, 0.0);
      for (int c = 0; c < r.width && c < final_table->width; ++c) {
        row[c] += ValueAt(*final_table, k, c);
      }
    }
  }
  return r;
}

// Fits r ~ sum c_op * delta_op over `candidates` (all of one table) by
// matching pursuit with integer coefficients; subtracts each fit from r.
void Attribute(const Workload& workload, const std::string& table, Residual* r,
               std::vector<Candidate*>& candidates) {
  if (r->zero() || candidates.empty()) return;
  std::vector<int64_t> sample;  // dense elements to correlate over
  if (!r->sparse) {
    const int64_t n = static_cast<int64_t>(r->dense.size());
    const int64_t stride = std::max<int64_t>(1, n / kDenseSample);
    for (int64_t i = 0; i < n; i += stride) sample.push_back(i);
  }
  // Sparse deltas are small: keep them; dense ones are recomputed on the sample.
  std::vector<TableDelta> sparse_deltas(candidates.size());
  if (r->sparse) {
    for (size_t i = 0; i < candidates.size(); ++i) {
      sparse_deltas[i] =
          *StepDelta(workload, table, candidates[i]->op.worker, candidates[i]->op.step);
    }
  }
  const int max_rounds = static_cast<int>(4 * candidates.size()) + 16;
  for (int round = 0; round < max_rounds && !r->zero(); ++round) {
    double best_score = 0;
    int64_t best_coefficient = 0;
    size_t best = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const OpId& op = candidates[i]->op;
      double dot = 0, norm = 0;
      if (!r->sparse) {
        for (int64_t e : sample) {
          const double d = Gradient(op.worker, op.step, table, static_cast<Key>(e), 0);
          dot += d * r->dense[e];
          norm += d * d;
        }
      } else {
        const TableDelta& delta = sparse_deltas[i];
        for (size_t k = 0; k < delta.keys.size(); ++k) {
          auto row = r->rows.find(delta.keys[k]);
          for (int c = 0; c < r->width; ++c) {
            const double d = delta.values[k * r->width + c];
            norm += d * d;
            if (row != r->rows.end()) dot += d * row->second[c];
          }
        }
      }
      if (norm == 0) continue;
      const int64_t coefficient = std::llround(dot / norm);
      const double score = std::abs(dot) / std::sqrt(norm);
      if (coefficient != 0 && score > best_score) {
        best_score = score;
        best_coefficient = coefficient;
        best = i;
      }
    }
    if (best_coefficient == 0) return;
    Candidate& c = *candidates[best];
    c.coefficient += best_coefficient;
    const TableDelta delta =
        r->sparse ? sparse_deltas[best] : *StepDelta(workload, table, c.op.worker, c.op.step);
    if (!r->sparse) {
      for (size_t e = 0; e < delta.values.size(); ++e) {
        r->dense[e] -= best_coefficient * static_cast<double>(delta.values[e]);
      }
    } else {
      for (size_t k = 0; k < delta.keys.size(); ++k) {
        std::vector<double>& row = r->rows[delta.keys[k]];
        row.resize(r->width, 0.0);
        for (int col = 0; col < r->width; ++col) {
          row[col] -= best_coefficient * static_cast<double>(delta.values[k * r->width + col]);
        }
      }
    }
  }
}

std::string OpName(const OpId& op) {
  return absl::StrCat("worker ", op.worker, " step ", op.step, " table ", op.table);
}

}  // namespace

JobValues ExpectedValuesOfOps(const Workload& workload, const std::vector<OpId>& ops) {
  std::map<std::string, Sums> sums = EmptySums(workload);
  for (const OpId& op : ops) {
    auto it = sums.find(op.table);
    if (it == sums.end()) continue;  // not a workload table: contributes nothing
    AddDelta(*StepDelta(workload, op.table, op.worker, op.step), 1, &it->second);
  }
  JobValues values;
  for (const auto& [name, s] : sums) {
    TableValues& t = values[name];
    t.table = name;
    t.sparse = s.sparse;
    t.width = s.width;
    if (!s.sparse) {
      t.values.resize(s.dense.size());
      for (size_t i = 0; i < s.dense.size(); ++i) t.values[i] = static_cast<float>(-s.dense[i]);
      continue;
    }
    for (const auto& [key, row] : s.rows) {
      t.keys.push_back(key);
      for (int64_t v : row) t.values.push_back(static_cast<float>(-v));
    }
  }
  return values;
}

JobValues ExpectedValues(const Workload& workload, const std::set<StepId>& steps) {
  std::vector<OpId> ops;
  for (const StepId& s : steps) {
    for (const std::string& table : workload.Tables()) ops.push_back(OpId{s.worker, s.step, table});
  }
  return ExpectedValuesOfOps(workload, ops);
}

std::set<StepId> StepsBeforeClock(int64_t clock, const std::vector<int>& workers) {
  std::set<StepId> steps;
  for (int w : workers) {
    for (int64_t s = 0; s < clock; ++s) steps.insert(StepId{w, s});
  }
  return steps;
}

JobValues ExpectedAtClock(const Workload& workload, int64_t clock,
                          const std::vector<int>& workers) {
  return ExpectedValues(workload, StepsBeforeClock(clock, workers));
}

Comparison Compare(const JobValues& expected, const JobValues& actual, int max_examples) {
  Comparison out;
  std::set<std::string> names;
  for (const auto& [name, t] : expected) names.insert(name);
  for (const auto& [name, t] : actual) names.insert(name);
  for (const std::string& name : names) {
    auto e = expected.find(name);
    auto a = actual.find(name);
    CompareTable(name, e == expected.end() ? nullptr : &e->second,
                 a == actual.end() ? nullptr : &a->second, max_examples, &out);
  }
  return out;
}

std::string Comparison::ToString() const {
  std::string s = absl::StrCat(compared_keys, " keys compared, ", mismatched_keys, " differ");
  for (const Mismatch& m : first) {
    absl::StrAppend(&s, "; ", m.table, "[", m.key, "]");
    if (m.column != 0) absl::StrAppend(&s, "[", m.column, "]");
    absl::StrAppend(&s, ": expected ", m.expected, " got ", m.actual);
  }
  return s;
}

std::string OracleReport::ToString() const {
  std::string s = absl::StrCat(
      "history: ", ok, " ok, ", failed, " fail, ", info, " info; checksum mismatches ",
      checksum_mismatches, "; lost ", lost, ", duplicates ", duplicates, ", unexpected ",
      unexpected, ", info applied ", info_applied, "; unexplained: ", unexplained.ToString());
  if (!examples.empty()) absl::StrAppend(&s, "; ", absl::StrJoin(examples, "; "));
  return s;
}

OracleReport Check(const Workload& workload, const std::vector<HistoryRecord>& history,
                   const JobValues& final_values) {
  OracleReport report;
  auto example = [&report](std::string text) {
    if (report.examples.size() < kMaxExamples) report.examples.push_back(std::move(text));
  };
  const std::vector<std::string> tables = workload.Tables();

  // Distinct ops with their history counts; workers' highest steps.
  std::map<OpId, Candidate> candidates;
  std::map<int, int64_t> max_step;
  for (const HistoryRecord& r : history) {
    const OpId op{r.worker, r.step, r.table};
    Candidate& c = candidates[op];
    c.op = op;
    switch (r.outcome) {
      case Outcome::kOk:
        ++report.ok;
        ++c.ok;
        break;
      case Outcome::kFail:
        ++report.failed;
        ++c.failed;
        break;
      case Outcome::kInfo:
        ++report.info;
        ++c.info;
        break;
    }
    auto [it, inserted] = max_step.try_emplace(r.worker, r.step);
    if (!inserted) it->second = std::max(it->second, r.step);
    absl::StatusOr<TableDelta> delta = StepDelta(workload, r.table, r.worker, r.step);
    if (!delta.ok() || DeltaChecksum(delta->keys, delta->values) != r.delta_checksum) {
      ++report.checksum_mismatches;
      example(absl::StrCat("checksum mismatch: ", OpName(op), " seq ", r.seq));
    }
  }
  // Ops never invoked, at steps up to one past each worker's last.
  for (const auto& [worker, last] : max_step) {
    for (int64_t step = 0; step <= last + 1; ++step) {
      for (const std::string& table : tables) {
        const OpId op{worker, step, table};
        candidates.try_emplace(op, Candidate{op});
      }
    }
  }

  // r = final - expected(acknowledged), attributed table by table.
  std::vector<OpId> acked;
  for (const auto& [op, c] : candidates) {
    for (int64_t i = 0; i < c.ok; ++i) acked.push_back(op);
  }
  const std::map<std::string, Sums> empty = EmptySums(workload);
  std::map<std::string, Sums> acked_sums = empty;
  for (const OpId& op : acked) {
    auto it = acked_sums.find(op.table);
    if (it != acked_sums.end()) {
      AddDelta(*StepDelta(workload, op.table, op.worker, op.step), 1, &it->second);
    }
  }
  for (const std::string& table : tables) {
    auto f = final_values.find(table);
    Residual r = MakeResidual(workload, table, acked_sums.at(table),
                              f == final_values.end() ? nullptr : &f->second);
    std::vector<Candidate*> of_table;
    for (auto& [op, c] : candidates) {
      if (op.table == table) of_table.push_back(&c);
    }
    Attribute(workload, table, &r, of_table);
  }

  // applied = ok - coefficient; classify and rebuild the explained state.
  std::vector<OpId> applied;
  for (const auto& [op, c] : candidates) {
    const int64_t n = c.ok - c.coefficient;
    for (int64_t i = 0; i < n; ++i) applied.push_back(op);
    if (n < c.ok) {
      report.lost += c.ok - std::max<int64_t>(n, 0);
      example(absl::StrCat("lost: ", OpName(op)));
    } else if (n > c.ok) {
      int64_t extra = n - c.ok;
      const int64_t from_info = std::min(extra, c.info);
      report.info_applied += from_info;
      extra -= from_info;
      if (extra > 0 && c.ok + c.info > 0) {
        report.duplicates += extra;
        example(absl::StrCat("duplicate (applied ", n, " times): ", OpName(op)));
      } else if (extra > 0) {
        report.unexpected += extra;
        example(absl::StrCat(
            c.failed > 0 ? "unexpected (failed op applied): " : "unexpected (never invoked): ",
            OpName(op)));
      }
    }
  }
  report.unexplained = Compare(ExpectedValuesOfOps(workload, applied), final_values);
  return report;
}

}  // namespace cairn::reliability
