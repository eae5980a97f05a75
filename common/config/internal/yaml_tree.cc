#include "common/config/internal/yaml_tree.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"

namespace cairn::config_internal {
namespace {

struct Context {
  std::string source_name;  // prefixes file locations
  std::string fixed_where;  // when set, the location of every node (overrides)
};

// Bounds on the tree an alias can build: one that refers to a node holding
// it recurses forever, and aliases of aliases multiply (a few lines can
// stand for billions of nodes). A job config is a few levels deep and a
// few hundred nodes.
constexpr int kMaxDepth = 64;
constexpr int64_t kMaxNodes = 1'000'000;

struct Budget {
  int64_t nodes = 0;
};

std::string LineCol(const YAML::Mark& mark) {
  return absl::StrCat(mark.line + 1, ":", mark.column + 1);
}

std::string Where(const Context& ctx, const YAML::Mark& mark) {
  if (!ctx.fixed_where.empty()) return ctx.fixed_where;
  return absl::StrCat(ctx.source_name, ":", LineCol(mark));
}

// " (line N indents with a tab: ...)" when a line up to `last_line`
// (0-based) has a tab in its indentation, the usual cause of a syntax
// error yaml-cpp words as something else; else "".
std::string TabHint(const std::string& text, int last_line) {
  std::istringstream lines(text);
  std::string line;
  for (int n = 0; n <= last_line && std::getline(lines, line); ++n) {
    const size_t indent = line.find_first_not_of(" \t");
    if (line.find('\t') < std::min(indent, line.size())) {
      return absl::StrCat(" (line ", n + 1,
                          " indents with a tab: YAML indents with spaces only)");
    }
  }
  return "";
}

std::string ChildPath(const std::string& path, const std::string& key) {
  return path.empty() ? key : absl::StrCat(path, ".", key);
}

absl::Status Convert(const Context& ctx, const YAML::Node& in, const std::string& path,
                     YamlNode* out, int depth, Budget* budget) {
  out->where = Where(ctx, in.Mark());
  if (depth > kMaxDepth) {
    return absl::InvalidArgumentError(absl::StrCat(
        out->where, ": `", path, "` nests more than ", kMaxDepth,
        " levels deep (an alias that refers to a node holding it?)"));
  }
  if (++budget->nodes > kMaxNodes) {
    return absl::InvalidArgumentError(absl::StrCat(
        out->where, ": the file stands for more than ", kMaxNodes,
        " values (aliases of aliases?); a job config needs a few hundred"));
  }
  switch (in.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      out->kind = YamlNode::Kind::kNull;
      return absl::OkStatus();
    case YAML::NodeType::Scalar:
      out->kind = YamlNode::Kind::kScalar;
      out->scalar = in.Scalar();
      out->plain = in.Tag() == "?";
      return absl::OkStatus();
    case YAML::NodeType::Sequence: {
      out->kind = YamlNode::Kind::kSequence;
      size_t i = 0;
      for (const YAML::Node& item : in) {
        YamlNode child;
        if (absl::Status s = Convert(ctx, item, absl::StrCat(path, "[", i, "]"), &child, depth + 1,
                                       budget);
            !s.ok()) {
          return s;
        }
        out->items.push_back(std::move(child));
        ++i;
      }
      return absl::OkStatus();
    }
    case YAML::NodeType::Map: {
      out->kind = YamlNode::Kind::kMap;
      std::vector<YAML::Mark> key_marks;  // parallel to out->entries
      for (auto it = in.begin(); it != in.end(); ++it) {
        // Copies: the iterator's pair is a temporary proxy.
        const YAML::Node key = it->first;
        const YAML::Node value = it->second;
        if (!key.IsScalar() || key.Scalar().empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat(Where(ctx, key.Mark()), ": keys of ",
                           path.empty() ? "the top level" : absl::StrCat("`", path, "`"),
                           " must be non-empty strings"));
        }
        YamlEntry entry;
        entry.key = key.Scalar();
        entry.key_where = Where(ctx, key.Mark());
        const std::string child_path = ChildPath(path, entry.key);
        for (size_t k = 0; k < out->entries.size(); ++k) {
          if (out->entries[k].key != entry.key) continue;
          std::string lines;
          if (ctx.fixed_where.empty()) {
            lines = absl::StrCat(": set at line ", LineCol(key_marks[k]), " and again at line ",
                                 LineCol(key.Mark()));
          }
          return absl::InvalidArgumentError(
              absl::StrCat(entry.key_where, ": duplicate key `", child_path, "`", lines));
        }
        key_marks.push_back(key.Mark());
        if (absl::Status s = Convert(ctx, value, child_path, &entry.value, depth + 1, budget);
            !s.ok()) {
          return s;
        }
        // A missing value (`key:`) has no position of its own; point at the key.
        if (entry.value.IsNull()) entry.value.where = entry.key_where;
        out->entries.push_back(std::move(entry));
      }
      return absl::OkStatus();
    }
  }
  return absl::InternalError("unknown yaml-cpp node type");
}

// Records where each document starts; ignores the rest.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;
  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

absl::StatusOr<YamlNode> ParseWith(const Context& ctx, const std::string& text) {
  std::vector<YAML::Node> docs;
  try {
    // Documents are counted first, at most 3: yaml-cpp (0.7) reads a `,`
    // outside a flow collection as an empty document without consuming it,
    // so YAML::LoadAll would never return (and never stop allocating).
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentStarts scan;
    while (scan.starts.size() < 3 && parser.HandleNextDocument(scan)) {
      const size_t n = scan.starts.size();
      if (n >= 2 && scan.starts[n - 1].pos == scan.starts[n - 2].pos) {
        const YAML::Mark& at = scan.starts[n - 1];
        const bool comma = at.pos >= 0 && static_cast<size_t>(at.pos) < text.size() &&
                           text[at.pos] == ',';
        return absl::InvalidArgumentError(absl::StrCat(
            Where(ctx, at), ": YAML syntax error: ",
            comma ? "`,` outside a flow collection ([...] or {...})" : "unexpected token",
            TabHint(text, at.line)));
      }
    }
    if (scan.starts.size() > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(ctx, scan.starts[1]),
                       ": more than one YAML document (`---`); a job is one document"));
    }
    if (!scan.starts.empty()) docs.push_back(YAML::Load(text));
  } catch (const YAML::Exception& e) {
    const std::string where = ctx.fixed_where.empty()
                                  ? absl::StrCat(ctx.source_name, ":", LineCol(e.mark))
                                  : ctx.fixed_where;
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": YAML syntax error: ", e.msg, TabHint(text, e.mark.line)));
  }
  YamlNode root;
  root.where = ctx.fixed_where.empty() ? absl::StrCat(ctx.source_name, ":1:1") : ctx.fixed_where;
  if (docs.empty()) return root;
  try {
    Budget budget;
    if (absl::Status s = Convert(ctx, docs[0], "", &root, 0, &budget); !s.ok()) return s;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(Where(ctx, e.mark), ": ", e.msg));
  }
  return root;
}

}  // namespace

const YamlNode* YamlNode::Find(const std::string& key) const {
  for (const YamlEntry& e : entries) {
    if (e.key == key) return &e.value;
  }
  return nullptr;
}

YamlNode* YamlNode::FindMutable(const std::string& key) {
  for (YamlEntry& e : entries) {
    if (e.key == key) return &e.value;
  }
  return nullptr;
}

absl::StatusOr<YamlNode> ParseYamlTree(const std::string& text,
                                       const std::string& source_name) {
  return ParseWith(Context{source_name, ""}, text);
}

absl::StatusOr<YamlNode> ParseOverrideValue(const std::string& value, const std::string& where) {
  const bool flow = value.size() >= 2 && ((value.front() == '[' && value.back() == ']') ||
                                          (value.front() == '{' && value.back() == '}'));
  if (!flow) {
    YamlNode node;
    node.kind = YamlNode::Kind::kScalar;
    node.scalar = value;
    node.where = where;
    return node;
  }
  return ParseWith(Context{"", where}, value);
}

std::string Describe(const YamlNode& node) {
  switch (node.kind) {
    case YamlNode::Kind::kNull:
      return "nothing";
    case YamlNode::Kind::kScalar:
      if (!node.plain) return absl::StrCat("the quoted string \"", node.scalar, "\"");
      return absl::StrCat("`", node.scalar, "`");
    case YamlNode::Kind::kSequence:
      return "a list";
    case YamlNode::Kind::kMap:
      return "a map";
  }
  return "?";
}

}  // namespace cairn::config_internal
