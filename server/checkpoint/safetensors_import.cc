#include "server/checkpoint/safetensors_import.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/bytes.h"
#include "common/partitioning.h"
#include "common/status_macros.h"

namespace cairn::checkpoint {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Bytes per element of the dtypes we read; 0 for any other.
uint64_t DtypeSize(const std::string& dtype) {
  if (dtype == "F32") return sizeof(float);
  if (dtype == "U64") return sizeof(uint64_t);
  return 0;
}

template <typename Dims>
std::string ShapeText(const Dims& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

// Checks one header entry and fills `out`. `buffer_size` is the size of the
// byte buffer after the header.
absl::Status ParseTensor(const std::string& path, const std::string& name, const json& entry,
                         uint64_t buffer_size, SafetensorsTensor* out) {
  const std::string where = absl::StrCat(path, ": tensor ", name, ": ");
  if (!entry.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(where, "header entry is not an object"));
  }
  const auto dtype = entry.find("dtype");
  if (dtype == entry.end() || !dtype->is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(where, "no \"dtype\" string"));
  }
  out->dtype = dtype->get<std::string>();
  const uint64_t element_size = DtypeSize(out->dtype);
  if (element_size == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "dtype ", out->dtype, " is not supported (only F32 and U64)"));
  }
  const auto shape = entry.find("shape");
  if (shape == entry.end() || !shape->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(where, "no \"shape\" array"));
  }
  uint64_t elements = 1;
  bool overflow = false;
  for (const json& dim : *shape) {
    if (!dim.is_number_unsigned() ||
        dim.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "shape ", shape->dump(), " is not a list of non-negative integers"));
    }
    out->shape.push_back(static_cast<int64_t>(dim.get<uint64_t>()));
    overflow |= __builtin_mul_overflow(elements, dim.get<uint64_t>(), &elements);
  }
  uint64_t size = 0;
  overflow |= __builtin_mul_overflow(elements, element_size, &size);
  if (overflow) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "shape ", ShapeText(out->shape), " is too large"));
  }
  const auto offsets = entry.find("data_offsets");
  if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2 ||
      !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "\"data_offsets\" is not [begin, end] of non-negative integers"));
  }
  out->begin = (*offsets)[0].get<uint64_t>();
  out->end = (*offsets)[1].get<uint64_t>();
  const std::string range = absl::StrCat("data_offsets [", out->begin, ",", out->end, "]");
  if (out->begin > out->end) {
    return absl::InvalidArgumentError(absl::StrCat(where, range, " end before they begin"));
  }
  if (out->end > buffer_size) {
    return absl::InvalidArgumentError(absl::StrCat(where, range, " run past the ", buffer_size,
                                                   "-byte data buffer (file truncated?)"));
  }
  if (out->end - out->begin != size) {
    return absl::InvalidArgumentError(absl::StrCat(where, out->dtype, " ",
                                                   ShapeText(out->shape), " needs ", size,
                                                   " bytes, ", range, " hold ",
                                                   out->end - out->begin));
  }
  return absl::OkStatus();
}

// InvalidArgument naming two tensors whose bytes overlap.
absl::Status CheckNoOverlap(const SafetensorsFile& file) {
  std::vector<std::pair<const std::string*, const SafetensorsTensor*>> order;
  for (const auto& [name, t] : file.tensors) {
    if (t.end > t.begin) order.emplace_back(&name, &t);
  }
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return a.second->begin < b.second->begin; });
  for (size_t i = 1; i < order.size(); ++i) {
    // Sorted by begin and no earlier pair overlaps: the previous tensor
    // reaches furthest.
    const auto& [prev_name, prev] = order[i - 1];
    const auto& [name, t] = order[i];
    if (t->begin < prev->end) {
      return absl::InvalidArgumentError(absl::StrCat(
          file.path, ": tensors ", *prev_name, " [", prev->begin, ",", prev->end, ") and ",
          *name, " [", t->begin, ",", t->end, ") overlap"));
    }
  }
  return absl::OkStatus();
}

// The tensor `name` of dtype `dtype` holding table `table`'s data.
absl::StatusOr<const SafetensorsTensor*> FindTableTensor(const SafetensorsFile& file,
                                                         const std::string& table,
                                                         const std::string& name,
                                                         const std::string& dtype) {
  const SafetensorsTensor* t = file.Find(name);
  if (t == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("table ", table, ": ", file.path, " has no tensor ", name));
  }
  if (t->dtype != dtype) {
    return absl::FailedPreconditionError(absl::StrCat("table ", table, ": tensor ", name,
                                                      " is ", t->dtype, ", the job needs ",
                                                      dtype, " (", file.path, ")"));
  }
  return t;
}

absl::StatusOr<PartitionRows> DenseRows(const SafetensorsFile& file, const v1::TableSpec& table,
                                        uint32_t num_partitions, uint32_t partition,
                                        int slots_per_element, const Optimizer* optimizer) {
  const uint64_t num_elements = DenseNumElements(table);
  if (num_elements == 0 || table.chunk_size() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table ", table.name(), ": dense table of shape ", ShapeText(table.shape()),
        " and chunk_size ", table.chunk_size(), " needs a non-empty shape and chunk_size > 0"));
  }
  ASSIGN_OR_RETURN(const SafetensorsTensor* t,
                   FindTableTensor(file, table.name(), table.name(), "F32"));
  if (!std::equal(t->shape.begin(), t->shape.end(), table.shape().begin(),
                  table.shape().end())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "table ", table.name(), ": file has ", ShapeText(t->shape), ", the job has ",
        ShapeText(table.shape()), " (", file.path, ")"));
  }
  const uint64_t chunk_size = static_cast<uint64_t>(table.chunk_size());
  const KeyRange range =
      DensePartitionRange(NumChunks(num_elements, chunk_size), num_partitions, partition,
                          table.partition_offset());
  PartitionRows rows;
  rows.slots_per_element = slots_per_element;
  if (range.size() == 0) return rows;
  const uint64_t first = range.begin * chunk_size;
  const uint64_t last = std::min(range.end * chunk_size, num_elements);
  for (Key c = range.begin; c < range.end; ++c) {
    rows.keys.push_back(c);
    rows.lengths.push_back(
        static_cast<uint32_t>(std::min(chunk_size, num_elements - c * chunk_size)));
  }
  rows.steps.assign(range.size(), 0);
  rows.values.resize(last - first);
  std::memcpy(rows.values.data(), file.Bytes(*t).data() + first * sizeof(float),
              rows.values.size() * sizeof(float));
  rows.slots.assign(rows.values.size() * slots_per_element, 0.0f);
  if (optimizer != nullptr) {
    for (size_t i = 0; i < rows.keys.size(); ++i) {
      const uint64_t off = (rows.keys[i] * chunk_size - first) * slots_per_element;
      optimizer->InitSlots(rows.slots.data() + off, rows.lengths[i]);
    }
  }
  return rows;
}

absl::StatusOr<PartitionRows> SparseRows(const SafetensorsFile& file, const v1::TableSpec& table,
                                         uint32_t num_partitions, uint32_t partition,
                                         int slots_per_element, const Optimizer* optimizer) {
  const std::string& name = table.name();
  if (table.width() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("table ", name, ": sparse table needs width > 0, has ", table.width()));
  }
  const uint64_t width = static_cast<uint64_t>(table.width());
  ASSIGN_OR_RETURN(const SafetensorsTensor* t, FindTableTensor(file, name, name, "F32"));
  if (t->shape.size() != 2 || static_cast<uint64_t>(t->shape[1]) != width) {
    return absl::FailedPreconditionError(absl::StrCat(
        "table ", name, ": file has ", ShapeText(t->shape), ", the job has [n,", width, "] (",
        file.path, ")"));
  }
  const uint64_t num_rows = static_cast<uint64_t>(t->shape[0]);
  const std::string keys_name = name + ".keys";
  ASSIGN_OR_RETURN(const SafetensorsTensor* k, FindTableTensor(file, name, keys_name, "U64"));
  if (k->shape.size() != 1 || static_cast<uint64_t>(k->shape[0]) != num_rows) {
    return absl::FailedPreconditionError(absl::StrCat(
        "table ", name, ": file has ", keys_name, " ", ShapeText(k->shape), " for ", num_rows,
        " rows of ", name, ", expected [", num_rows, "] (", file.path, ")"));
  }
  std::vector<Key> keys(num_rows);
  if (num_rows > 0) std::memcpy(keys.data(), file.Bytes(*k).data(), num_rows * sizeof(Key));
  const bool ascending =
      std::adjacent_find(keys.begin(), keys.end(), std::greater_equal<Key>()) == keys.end();
  if (!ascending) {
    std::vector<Key> sorted = keys;
    std::sort(sorted.begin(), sorted.end());
    const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup != sorted.end()) {
      return absl::FailedPreconditionError(absl::StrCat("table ", name, ": key ", *dup,
                                                        " appears more than once in ",
                                                        keys_name, " (", file.path, ")"));
    }
  }
  std::vector<std::pair<Key, uint64_t>> held;  // (key, row in the file)
  for (uint64_t i = 0; i < num_rows; ++i) {
    if (SparsePartition(keys[i], num_partitions) == partition) held.emplace_back(keys[i], i);
  }
  if (!ascending) std::sort(held.begin(), held.end());

  PartitionRows rows;
  rows.slots_per_element = slots_per_element;
  rows.keys.reserve(held.size());
  rows.lengths.assign(held.size(), static_cast<uint32_t>(width));
  rows.steps.assign(held.size(), 0);
  rows.values.resize(held.size() * width);
  rows.slots.assign(rows.values.size() * slots_per_element, 0.0f);
  const char* src = file.Bytes(*t).data();
  for (size_t j = 0; j < held.size(); ++j) {
    rows.keys.push_back(held[j].first);
    std::memcpy(rows.values.data() + j * width, src + held[j].second * width * sizeof(float),
                width * sizeof(float));
    if (optimizer != nullptr) {
      optimizer->InitSlots(rows.slots.data() + j * width * slots_per_element, width);
    }
  }
  return rows;
}

absl::StatusOr<PartitionRows> BuildRows(const SafetensorsFile& file, const v1::TableSpec& table,
                                        uint32_t num_partitions, uint32_t partition,
                                        int slots_per_element, const Optimizer* optimizer) {
  if (num_partitions == 0 || partition >= num_partitions || slots_per_element < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table ", table.name(), ": partition ", partition, " of ", num_partitions,
        " with ", slots_per_element, " optimizer slots per element"));
  }
  if (table.kind() == v1::TABLE_KIND_DENSE) {
    return DenseRows(file, table, num_partitions, partition, slots_per_element, optimizer);
  }
  if (table.kind() == v1::TABLE_KIND_SPARSE) {
    return SparseRows(file, table, num_partitions, partition, slots_per_element, optimizer);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("table ", table.name(), ": unknown kind ", table.kind()));
}

}  // namespace

const SafetensorsTensor* SafetensorsFile::Find(const std::string& name) const {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

absl::string_view SafetensorsFile::Bytes(const SafetensorsTensor& tensor) const {
  return absl::string_view(data).substr(tensor.begin, tensor.end - tensor.begin);
}

absl::StatusOr<SafetensorsFile> ReadSafetensors(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  if (!fs::is_regular_file(status)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  const uint64_t file_size = fs::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  if (file_size < sizeof(uint64_t)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": file of ", file_size, " bytes is shorter than the 8-byte header length"));
  }
  uint64_t header_size = 0;  // little-endian, as the host (common/bytes.h)
  in.read(reinterpret_cast<char*>(&header_size), sizeof(header_size));
  if (header_size > file_size - sizeof(uint64_t)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": header length ", header_size, " runs past the end of the file (",
                     file_size - sizeof(uint64_t), " bytes follow the length)"));
  }
  std::string header_text(header_size, '\0');
  SafetensorsFile file;
  file.path = path;
  file.data.resize(file_size - sizeof(uint64_t) - header_size);
  in.read(header_text.data(), static_cast<std::streamsize>(header_text.size()));
  in.read(file.data.data(), static_cast<std::streamsize>(file.data.size()));
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": read failed"));

  json header;
  try {
    header = json::parse(header_text);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": header is not valid JSON: ", e.what()));
  }
  if (!header.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": header is not a JSON object"));
  }
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": \"__metadata__\" is not an object"));
      }
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          return absl::InvalidArgumentError(absl::StrCat(
              path, ": \"__metadata__\" entry ", key, " is not a string"));
        }
        file.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    SafetensorsTensor tensor;
    RETURN_IF_ERROR(ParseTensor(path, name, entry, file.data.size(), &tensor));
    file.tensors.emplace(name, std::move(tensor));
  }
  RETURN_IF_ERROR(CheckNoOverlap(file));
  return file;
}

absl::StatusOr<PartitionRows> InitialRows(const SafetensorsFile& file,
                                          const v1::TableSpec& table,
                                          uint32_t num_partitions, uint32_t partition,
                                          int slots_per_element) {
  return BuildRows(file, table, num_partitions, partition, slots_per_element, nullptr);
}

absl::StatusOr<PartitionRows> InitialRows(const SafetensorsFile& file,
                                          const v1::TableSpec& table,
                                          uint32_t num_partitions, uint32_t partition,
                                          const Optimizer& optimizer) {
  return BuildRows(file, table, num_partitions, partition, optimizer.SlotsPerElement(),
                   &optimizer);
}

}  // namespace cairn::checkpoint
