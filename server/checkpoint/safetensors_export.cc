#include "server/checkpoint/safetensors_export.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cairn/v1/types.pb.h"
#include "common/status_macros.h"
#include "server/checkpoint/checkpoint_reader.h"
#include "server/checkpoint/restore_plan.h"

namespace cairn::checkpoint {
namespace {

namespace fs = std::filesystem;

// Tensor name -> (dtype, shape, bytes).
struct Tensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

template <typename T>
void Append(const std::vector<T>& v, std::string* out) {
  out->append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// Builds the tensors of the chosen checkpoint.
absl::StatusOr<std::map<std::string, Tensor>> Collect(
    const std::vector<RestoreSource>& sources) {
  std::map<std::string, Tensor> tensors;
  for (const TableShape& t : sources.front().manifest.tables) {
    std::map<Key, std::pair<uint32_t, std::vector<float>>> rows;  // key -> (length, values)
    for (const RestoreSource& s : sources) {
      for (const PartitionEntry& e : s.manifest.partitions) {
        if (e.table_id != t.id) continue;
        ASSIGN_OR_RETURN(PartitionRows part,
                         s.reader->ReadPartition(s.manifest, e.table_id, e.partition));
        size_t off = 0;
        for (size_t i = 0; i < part.keys.size(); ++i) {
          rows[part.keys[i]] = {part.lengths[i],
                                std::vector<float>(part.values.begin() + off,
                                                   part.values.begin() + off + part.lengths[i])};
          off += part.lengths[i];
        }
      }
    }
    Tensor values{"F32", {}, {}};
    for (const auto& [key, row] : rows) Append(row.second, &values.bytes);
    if (t.kind == v1::TABLE_KIND_DENSE) {
      values.shape = t.shape;
      uint64_t n = 1;
      for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
      if (values.bytes.size() != n * sizeof(float)) {
        return absl::DataLossError(absl::StrCat("table ", t.name, ": checkpoint holds ",
                                                values.bytes.size() / sizeof(float),
                                                " floats, its shape needs ", n));
      }
    } else {
      values.shape = {static_cast<int64_t>(rows.size()), t.width};
      Tensor keys{"U64", {static_cast<int64_t>(rows.size())}, {}};
      for (const auto& entry : rows) Append(std::vector<Key>{entry.first}, &keys.bytes);
      tensors[t.name + ".keys"] = std::move(keys);
    }
    tensors[t.name] = std::move(values);
  }
  return tensors;
}

// What an export shows of a table: "dense [256,784]", "sparse width 8".
std::string ExportedShape(const TableShape& t) {
  if (t.kind == v1::TABLE_KIND_DENSE) {
    return absl::StrCat("dense [", absl::StrJoin(t.shape, ","), "]");
  }
  return absl::StrCat("sparse width ", t.width);
}

absl::Status CheckExpectedTables(const Manifest& m, const std::vector<TableShape>& expected) {
  const std::string checkpoint = absl::StrCat("the checkpoint at clock ", m.clock);
  for (const TableShape& want : expected) {
    auto have = std::find_if(m.tables.begin(), m.tables.end(),
                             [&want](const TableShape& t) { return t.name == want.name; });
    if (have == m.tables.end()) {
      return absl::InvalidArgumentError(absl::StrCat("table ", want.name, ": the job file has ",
                                                     ExportedShape(want), ", ", checkpoint,
                                                     " has no such table"));
    }
    if (ExportedShape(*have) != ExportedShape(want)) {
      return absl::InvalidArgumentError(absl::StrCat("table ", want.name, ": ", checkpoint,
                                                     " has ", ExportedShape(*have),
                                                     ", the job file has ", ExportedShape(want)));
    }
  }
  for (const TableShape& t : m.tables) {
    const bool listed = std::any_of(expected.begin(), expected.end(),
                                    [&t](const TableShape& want) { return want.name == t.name; });
    if (!listed) {
      return absl::InvalidArgumentError(absl::StrCat("table ", t.name, ": ", checkpoint, " has ",
                                                     ExportedShape(t),
                                                     ", the job file has no such table"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> FindStores(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return absl::NotFoundError(absl::StrCat("checkpoint directory ", root, " does not exist"));
  }
  if (fs::exists(fs::path(root) / "CURRENT", ec)) return std::vector<std::string>{root};
  std::vector<std::string> stores;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    // <dir>/coordinator holds the coordinator's records, not partitions.
    if (entry.is_directory() && fs::exists(entry.path() / "CURRENT") &&
        entry.path().filename() != "coordinator") {
      stores.push_back(entry.path().string());
    }
  }
  std::sort(stores.begin(), stores.end());
  if (stores.empty()) {
    return absl::NotFoundError(absl::StrCat("checkpoint directory ", root, " holds no store"));
  }
  return stores;
}

absl::StatusOr<ExportSummary> ExportSafetensors(const std::vector<std::string>& stores,
                                                const std::string& out_path,
                                                const std::vector<TableShape>* expected) {
  if (stores.empty()) return absl::NotFoundError("no checkpoint store given");
  const fs::path parent = fs::absolute(fs::path(out_path)).parent_path();
  if (std::error_code ec; !fs::is_directory(parent, ec)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot write ", out_path, ": directory ",
                                                   parent.string(), " does not exist"));
  }
  std::vector<std::unique_ptr<CheckpointReader>> owned;
  std::vector<const CheckpointReader*> readers;
  for (const std::string& dir : stores) {
    ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReader> r, CheckpointReader::Open(dir));
    readers.push_back(r.get());
    owned.push_back(std::move(r));
  }
  ASSIGN_OR_RETURN(std::vector<RestoreSource> sources, PlanRestore(readers));
  if (expected != nullptr) {
    RETURN_IF_ERROR(CheckExpectedTables(sources.front().manifest, *expected));
  }
  ASSIGN_OR_RETURN(auto tensors, Collect(sources));

  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"cairn.clock", std::to_string(sources.front().manifest.clock)}};
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    header[name] = {{"dtype", t.dtype},
                    {"shape", t.shape},
                    {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const std::string tmp = out_path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    const uint64_t n = text.size();
    out.write(reinterpret_cast<const char*>(&n), sizeof(n));
    out << text;
    for (const auto& entry : tensors) out << entry.second.bytes;
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return absl::UnavailableError(absl::StrCat("cannot write ", out_path, " (through ", tmp,
                                                 ")"));
    }
  }
  std::error_code ec;
  fs::rename(tmp, out_path, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("cannot rename ", tmp, " to ", out_path, ": ",
                                               ec.message()));
  }
  return ExportSummary{sources.front().manifest.clock, tensors.size(),
                       sizeof(uint64_t) + text.size() + offset};
}

}  // namespace cairn::checkpoint
