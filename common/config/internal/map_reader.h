// Typed, strict reads of one YAML map of a job config.
//
// Open() rejects any key outside the caller's list (suggesting the closest
// known key by edit distance); each read then checks the value's type and
// range and fails with "file:line:col: `path.key` must be ...; got ...".
// Reading an absent key leaves the output untouched (the caller's default);
// a key given with no value (`key:`) is an error, never a default.
//
// Borrows the node it reads: the YamlNode must outlive the reader.
// Not thread-safe; confined to the parsing thread.
#ifndef CAIRN_COMMON_CONFIG_INTERNAL_MAP_READER_H_
#define CAIRN_COMMON_CONFIG_INTERNAL_MAP_READER_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/config/internal/yaml_tree.h"

namespace cairn::config_internal {

// InvalidArgument "<where>: <message>".
absl::Status ErrorAt(const std::string& where, const std::string& message);

// Allowed interval of a real number; open ends exclude the bound.
struct NumberRange {
  double min = -std::numeric_limits<double>::infinity();
  bool min_open = false;
  double max = std::numeric_limits<double>::infinity();
  bool max_open = false;
};

class MapReader {
 public:
  // `node` must be a map whose keys all appear in `known`. `path` is the
  // map's key path ("" for the top level, "tables[2].optimizer").
  static absl::StatusOr<MapReader> Open(const YamlNode& node, const std::string& path,
                                        std::vector<std::string> known);

  bool Has(const std::string& key) const { return node_->Find(key) != nullptr; }
  // "path.key".
  std::string Path(const std::string& key) const;
  // Location of the key's value, or of the map itself when the key is absent.
  std::string Where(const std::string& key) const;
  // InvalidArgument "<where of key>: `path.key` <message>".
  absl::Status Error(const std::string& key, const std::string& message) const;

  // A bare integer (no quotes, no fraction, no exponent) in [min, max].
  absl::Status Int(const std::string& key, int64_t min, int64_t max, int64_t* out) const;
  absl::Status Int32(const std::string& key, int32_t min, int32_t max, int* out) const;
  // A bare integer in [0, 2^64 - 1].
  absl::Status Uint64(const std::string& key, uint64_t* out) const;
  // A bare finite number (integer or decimal) inside `range`.
  absl::Status Double(const std::string& key, const NumberRange& range, double* out) const;
  absl::Status Float(const std::string& key, const NumberRange& range, float* out) const;
  // Bare `true` or `false`; YAML 1.1's yes/no/on/off are rejected by name.
  absl::Status Bool(const std::string& key, bool* out) const;
  // Any scalar, taken as text; `non_empty` rejects "".
  absl::Status String(const std::string& key, bool non_empty, std::string* out) const;
  // A scalar equal to one of `choices`.
  absl::Status Choice(const std::string& key, const std::vector<std::string>& choices,
                      std::string* out) const;
  // A duration with its unit ("3s"); see units.h. `min_exclusive`: the value
  // must be greater.
  absl::Status Duration(const std::string& key, absl::Duration min_exclusive,
                        absl::Duration* out) const;
  // A size ("64MiB", "1048576"); see units.h. Must be in [min, max].
  absl::Status Size(const std::string& key, int64_t min, int64_t max, int64_t* out) const;
  // A list of bare integers, each in [min, max]; `min_items` entries at least.
  absl::Status IntList(const std::string& key, int64_t min, int64_t max, size_t min_items,
                       std::vector<int64_t>* out) const;
  // The key's value when it is a map / a list; nullptr when the key is absent.
  absl::StatusOr<const YamlNode*> Map(const std::string& key) const;
  absl::StatusOr<const YamlNode*> Sequence(const std::string& key) const;

 private:
  MapReader(const YamlNode* node, std::string path) : node_(node), path_(std::move(path)) {}
  // The key's value if present and a scalar; nullptr if absent; else error.
  absl::StatusOr<const YamlNode*> Scalar(const std::string& key, const char* expected) const;

  const YamlNode* node_;  // borrowed
  std::string path_;
};

// Text of a bare integer range for messages: "a non-negative integer",
// "an integer >= 1", "an integer in [0, 65535]".
std::string DescribeIntRange(int64_t min, int64_t max);

}  // namespace cairn::config_internal

#endif  // CAIRN_COMMON_CONFIG_INTERNAL_MAP_READER_H_
