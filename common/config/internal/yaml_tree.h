// A YAML document as a plain tree that remembers where each value came from.
//
// yaml-cpp's Node silently keeps the first of two equal keys on lookup and
// loses whether a scalar was quoted; this tree is built once from yaml-cpp's
// parse, rejects duplicate and non-string keys, records for every scalar
// whether it was written bare (`2`) or quoted/tagged (`"2"`), and carries a
// location string ("job.yaml:3:14", 1-based, or the override that set it).
//
// Values; not thread-safe to mutate, safe to read from several threads.
#ifndef CAIRN_COMMON_CONFIG_INTERNAL_YAML_TREE_H_
#define CAIRN_COMMON_CONFIG_INTERNAL_YAML_TREE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cairn::config_internal {

struct YamlEntry;

struct YamlNode {
  enum class Kind { kNull, kScalar, kSequence, kMap };

  Kind kind = Kind::kNull;
  std::string scalar;   // kScalar: the text, without quotes
  bool plain = true;    // kScalar: written without quotes or an explicit tag
  std::string where;    // "file:line:col" of the value (of its key when null)
  std::vector<YamlNode> items;     // kSequence
  std::vector<YamlEntry> entries;  // kMap, in file order, keys unique

  bool IsMap() const { return kind == Kind::kMap; }
  bool IsSequence() const { return kind == Kind::kSequence; }
  bool IsScalar() const { return kind == Kind::kScalar; }
  bool IsNull() const { return kind == Kind::kNull; }
  // The entry with key `key`, or nullptr (also when this is not a map).
  const YamlNode* Find(const std::string& key) const;
  YamlNode* FindMutable(const std::string& key);
};

struct YamlEntry {
  std::string key;
  std::string key_where;  // location of the key
  YamlNode value;
};

// Parses one YAML document. `source_name` prefixes every location. An empty
// document (nothing but comments or blanks) gives a kNull root.
// InvalidArgument on a syntax error, more than one document, a duplicate key
// in one map ("duplicate key `metrics.port` at line 5:3; first at line 4:3"),
// or a key that is not a string. Locations are 1-based line:column.
absl::StatusOr<YamlNode> ParseYamlTree(const std::string& text, const std::string& source_name);

// Converts a value given on a command line. A value that starts with '[' and
// ends with ']' (or '{' ... '}') is parsed as a YAML flow collection; anything
// else is one bare scalar taken verbatim (so "[::1]:5000" stays a string).
// Every node's location is `where`.
absl::StatusOr<YamlNode> ParseOverrideValue(const std::string& value, const std::string& where);

// Short description of a node for messages: "\"2.5\"" (quoted), "2.5",
// "a list", "a map", "nothing".
std::string Describe(const YamlNode& node);

}  // namespace cairn::config_internal

#endif  // CAIRN_COMMON_CONFIG_INTERNAL_YAML_TREE_H_
