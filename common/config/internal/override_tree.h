// Applying one "key.path=value" override onto a parsed YAML tree.
//
// Not thread-safe; mutates the tree it is given.
#ifndef CAIRN_COMMON_CONFIG_INTERNAL_OVERRIDE_TREE_H_
#define CAIRN_COMMON_CONFIG_INTERNAL_OVERRIDE_TREE_H_

#include <string>

#include "absl/status/status.h"
#include "common/config/internal/yaml_tree.h"

namespace cairn::config_internal {

// `assignment` is "<path>=<value>". The path is keys joined by '.', each
// optionally followed by list selectors: "[2]" (index) or "[emb_user]" (the
// entry whose `name` is emb_user), e.g. "tables[emb_user].optimizer.learning_rate".
// Missing map keys along the path are created; the value (see
// ParseOverrideValue) replaces whatever was there, and its location reads
// "override `<assignment>`" so later validation errors name the flag.
// InvalidArgument, naming the override, on a malformed path, a selector that
// matches no list entry, or a path through a scalar.
absl::Status ApplyOverrideToTree(const std::string& assignment, YamlNode* root);

}  // namespace cairn::config_internal

#endif  // CAIRN_COMMON_CONFIG_INTERNAL_OVERRIDE_TREE_H_
