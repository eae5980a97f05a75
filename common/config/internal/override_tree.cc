#include "common/config/internal/override_tree.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace cairn::config_internal {
namespace {

struct Segment {
  std::string key;
  std::vector<std::string> selectors;  // "[...]" contents, in order
};

absl::StatusOr<std::vector<Segment>> SplitPath(const std::string& path) {
  std::vector<Segment> segments;
  size_t i = 0;
  while (true) {
    Segment seg;
    while (i < path.size() && path[i] != '.' && path[i] != '[') seg.key += path[i++];
    if (seg.key.empty()) return absl::InvalidArgumentError("empty key in the path");
    while (i < path.size() && path[i] == '[') {
      const size_t close = path.find(']', i);
      if (close == std::string::npos || close == i + 1) {
        return absl::InvalidArgumentError("unclosed or empty [] in the path");
      }
      seg.selectors.push_back(path.substr(i + 1, close - i - 1));
      i = close + 1;
    }
    segments.push_back(std::move(seg));
    if (i == path.size()) return segments;
    if (path[i] != '.') {
      return absl::InvalidArgumentError(absl::StrCat("unexpected '", std::string(1, path[i]),
                                                     "' in the path"));
    }
    ++i;
  }
}

bool IsIndex(const std::string& s) {
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return !s.empty();
}

// The list entry `selector` picks from `list`, or nullptr.
YamlNode* Select(YamlNode* list, const std::string& selector) {
  if (IsIndex(selector)) {
    size_t index = 0;
    if (!absl::SimpleAtoi(selector, &index) || index >= list->items.size()) return nullptr;
    return &list->items[index];
  }
  for (YamlNode& item : list->items) {
    const YamlNode* name = item.IsMap() ? item.Find("name") : nullptr;
    if (name != nullptr && name->IsScalar() && name->scalar == selector) return &item;
  }
  return nullptr;
}

}  // namespace

absl::Status ApplyOverrideToTree(const std::string& assignment, YamlNode* root) {
  const std::string where = absl::StrCat("override `", assignment, "`");
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": expected key.path=value, e.g. consistency.staleness=2"));
  }
  const std::string path = std::string(absl::StripAsciiWhitespace(assignment.substr(0, eq)));
  absl::StatusOr<std::vector<Segment>> segments = SplitPath(path);
  if (!segments.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", segments.status().message()));
  }
  ASSIGN_OR_RETURN(YamlNode value, ParseOverrideValue(assignment.substr(eq + 1), where));
  YamlNode* node = root;
  std::string walked;
  for (const Segment& seg : *segments) {
    if (node->IsNull()) {  // `section:` left empty, or created just now
      node->kind = YamlNode::Kind::kMap;
    }
    if (!node->IsMap()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": `", walked.empty() ? "(top)" : walked, "` is not a map, so it has no key `",
          seg.key, "`"));
    }
    walked = walked.empty() ? seg.key : absl::StrCat(walked, ".", seg.key);
    YamlNode* child = node->FindMutable(seg.key);
    const bool absent = child == nullptr;
    if (absent) {
      YamlEntry entry;
      entry.key = seg.key;
      entry.key_where = where;
      entry.value.where = where;
      node->entries.push_back(std::move(entry));
      child = &node->entries.back().value;
    }
    node = child;
    for (const std::string& selector : seg.selectors) {
      if (!node->IsSequence()) {
        // An override selects an entry the file has; it does not make one.
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": ",
            absent ? absl::StrCat("the file has no `", walked, "`")
                   : absl::StrCat("`", walked, "` is not a list"),
            ", so [", selector, "] selects nothing",
            !absent ? ""
            : walked == "tables"
                ? " (a model's own tables take their settings from `training`: "
                  "training.optimizer, training.wire_dtype, and for the ctr model's "
                  "embedding tables training.embedding.capacity_rows, .ttl_clocks, ...)"
                : absl::StrCat(" (set the whole list: ", walked, "=[...])")));
      }
      YamlNode* item = Select(node, selector);
      if (item == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": `", walked, "` has no entry ",
            IsIndex(selector) ? absl::StrCat("at index ", selector)
                              : absl::StrCat("named \"", selector, "\""),
            " (", node->items.size(), " entries)"));
      }
      walked = absl::StrCat(walked, "[", selector, "]");
      node = item;
    }
  }
  *node = std::move(value);
  return absl::OkStatus();
}

}  // namespace cairn::config_internal
