#include "tools/bench/bench_cases.h"

#include <cstring>
#include <algorithm>
#include <random>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cairn/v1/types.pb.h"
#include "common/partitioning.h"
#include "common/status_macros.h"
#include "tools/bench/bench_cluster.h"

namespace cairn::bench {
namespace {

constexpr int64_t kSparseRows = 4096;
constexpr float kGradient = 1.0f / 1024.0f;
constexpr uint64_t kKeySeed = 20240601;

std::string SparseOperation(const char* op) {
  return absl::StrCat(op, " ", kSparseRows, " rows x ", kSparseWidth);
}

}  // namespace

const std::vector<CaseGroup>& AllCaseGroups() {
  static const std::vector<CaseGroup>* groups = new std::vector<CaseGroup>{
      {"push-1mib", "push 1 MiB", true, false, kDense1MiB, kDense1MiBFloats, 0},
      {"pull-1mib", "pull 1 MiB", false, false, kDense1MiB, kDense1MiBFloats, 0},
      // Cairn moves these as bfloat16; the references move the float32 bytes.
      {"push-1mib-bf16", "push 1 MiB as bf16", true, false, kDense1MiBBf16, kDense1MiBFloats, 0},
      {"pull-1mib-bf16", "pull 1 MiB as bf16", false, false, kDense1MiBBf16, kDense1MiBFloats,
       0},
      {"push-16mib", "push 16 MiB", true, false, kDense16MiB, kDense16MiBFloats, 0},
      {"pull-16mib", "pull 16 MiB", false, false, kDense16MiB, kDense16MiBFloats, 0},
      {"sparse-push", SparseOperation("push"), true, true, kSparse, kSparseRows * kSparseWidth,
       kSparseRows},
      {"sparse-pull", SparseOperation("pull"), false, true, kSparse, kSparseRows * kSparseWidth,
       kSparseRows},
  };
  return *groups;
}

absl::StatusOr<std::vector<CaseGroup>> SelectCaseGroups(const std::string& ids) {
  absl::flat_hash_set<std::string> wanted;
  for (absl::string_view id : absl::StrSplit(ids, ',', absl::SkipWhitespace())) {
    wanted.insert(std::string(absl::StripAsciiWhitespace(id)));
  }
  std::vector<std::string> known;
  for (const CaseGroup& g : AllCaseGroups()) known.push_back(g.id);
  for (const std::string& id : wanted) {
    if (id != "all" && std::find(known.begin(), known.end(), id) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat("--cases: unknown case \"", id,
                                                     "\"; known: all, ",
                                                     absl::StrJoin(known, ", ")));
    }
  }
  std::vector<CaseGroup> out;
  for (const CaseGroup& g : AllCaseGroups()) {
    if (wanted.contains("all") || wanted.contains(g.id)) out.push_back(g);
  }
  if (out.empty()) return absl::InvalidArgumentError("--cases selects no case");
  return out;
}

CaseRunner::CaseRunner(const CaseGroup& group, const v1::TableSpec& table, Client* client,
                       ReferenceClient* reference)
    : group_(group), table_(table), client_(client), reference_(reference) {}

absl::Status CaseRunner::Prepare(bool lend) {
  const bool sparse = table_.kind() == v1::TABLE_KIND_SPARSE;
  const int64_t floats = sparse ? group_.rows * table_.width()
                               : static_cast<int64_t>(DenseNumElements(table_));
  if (table_.name() != group_.table || sparse != group_.sparse || floats != group_.num_floats) {
    return absl::InvalidArgumentError(
        absl::StrCat("case ", group_.id, " needs table ", group_.table, " of ",
                     group_.num_floats, " floats; the job's table ", table_.name(), " has ",
                     floats));
  }
  const uint64_t bytes = static_cast<uint64_t>(group_.num_floats) * sizeof(float);
  if (lend) {
    lent_ = client_ == nullptr ? nullptr : client_->LendSharedBuffer(bytes);
    if (lent_ == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("case ", group_.id, ": the client lent no buffer of ", bytes,
                       " bytes (a lent buffer holds at most a quarter of the shared region)"));
    }
    values_ = absl::MakeSpan(reinterpret_cast<float*>(lent_->bytes().data()),
                             static_cast<size_t>(group_.num_floats));
  } else {
    own_values_.resize(group_.num_floats);
    values_ = absl::MakeSpan(own_values_);
  }
  std::fill(values_.begin(), values_.end(), group_.push ? kGradient : 0.0f);
  keys_.clear();
  if (group_.sparse) {
    std::mt19937_64 random(kKeySeed);
    absl::flat_hash_set<Key> seen;
    while (static_cast<int64_t>(keys_.size()) < group_.rows) {
      const Key k = random();
      if (seen.insert(k).second) keys_.push_back(k);
    }
  } else {
    const uint64_t chunks =
        NumChunks(static_cast<uint64_t>(group_.num_floats), table_.chunk_size());
    for (uint64_t c = 0; c < chunks; ++c) keys_.push_back(c);
  }
  return absl::OkStatus();
}

absl::Span<const char> CaseRunner::KeyBytes() const {
  return {reinterpret_cast<const char*>(keys_.data()), keys_.size() * sizeof(Key)};
}

absl::Span<const char> CaseRunner::ValueBytes() const {
  return {reinterpret_cast<const char*>(values_.data()), values_.size() * sizeof(float)};
}

absl::Status CaseRunner::CairnStep() {
  // The waiting forms, as a training step calls them.
  if (group_.sparse) {
    return group_.push ? client_->PushAndWait({}, {{group_.table, keys_, values_}})
                       : client_->PullAndWait({}, {{group_.table, keys_, values_}});
  }
  return group_.push ? client_->PushAndWait({{group_.table, values_}}, {})
                     : client_->PullAndWait({{group_.table, values_}}, {});
}

std::function<absl::Status()> CaseRunner::Step(const std::string& method) {
  if (IsCairnMethod(method)) return [this] { return CairnStep(); };
  if (method == "memcpy") {
    // The floor of any path: the value bytes copied once, from a buffer as
    // large as the values to them.
    copy_source_.assign(values_.size(), 1.0f);
    return [this] {
      std::memcpy(values_.data(), copy_source_.data(), values_.size() * sizeof(float));
      return absl::OkStatus();
    };
  }
  auto out = [this] {
    return absl::Span<char>(reinterpret_cast<char*>(values_.data()),
                            values_.size() * sizeof(float));
  };
  const uint64_t piece = StreamPieceBytes(value_bytes());
  if (method == "unary") {
    if (group_.push) return [this] { return reference_->UnaryPush(KeyBytes(), ValueBytes()); };
    return [this, out] { return reference_->UnaryPull(KeyBytes(), out()); };
  }
  if (method == "unary-callback") {
    if (group_.push) return [this] { return reference_->CallbackPush(KeyBytes(), ValueBytes()); };
    return [this, out] { return reference_->CallbackPull(KeyBytes(), out()); };
  }
  if (group_.push) {
    return [this, piece] { return reference_->StreamPush(KeyBytes(), ValueBytes(), piece); };
  }
  return [this, out, piece] { return reference_->StreamPull(KeyBytes(), out(), piece); };
}

absl::Status CaseRunner::CheckPulledValues() const {
  for (size_t i = 1; i < values_.size(); ++i) {
    if (values_[i] != values_[0]) {
      return absl::InternalError(absl::StrCat(group_.operation, " table=", group_.table,
                                              ": value ", i, " is ", values_[i],
                                              ", value 0 is ", values_[0],
                                              "; every value got the same gradients"));
    }
  }
  return absl::OkStatus();
}

}  // namespace cairn::bench
