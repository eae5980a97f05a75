#include "tests/tools/promtool_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace cairn::testing {
namespace {

std::string ReadAll(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) out.append(buffer, n);
  return out;
}

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}

}  // namespace

bool HaveTool(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& args,
                                         const std::string& input) {
  if (args.empty()) return absl::InvalidArgumentError("RunCommand: no command");
  // Files, not pipes, for stdin and output: no deadlock on large input.
  std::FILE* in = std::tmpfile();
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  auto close_all = [&] {
    for (std::FILE* f : {in, out, err}) {
      if (f != nullptr) std::fclose(f);
    }
  };
  if (in == nullptr || out == nullptr || err == nullptr) {
    close_all();
    return absl::InternalError(absl::StrCat("tmpfile: ", std::strerror(errno)));
  }
  std::fwrite(input.data(), 1, input.size(), in);
  std::fflush(in);
  std::rewind(in);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fileno(in), STDIN_FILENO);
    dup2(fileno(out), STDOUT_FILENO);
    dup2(fileno(err), STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (pid < 0) {
    close_all();
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = ReadAll(out);
  result.err = ReadAll(err);
  close_all();
  if (result.exit_code == 127) {
    return absl::NotFoundError(absl::StrCat("cannot run ", args[0], ": ", result.err));
  }
  return result;
}

absl::StatusOr<std::vector<Sample>> ParseExposition(const std::string& text) {
  std::vector<Sample> samples;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    size_t i = 0;
    while (i < line.size() && IsNameChar(line[i])) ++i;
    s.name = std::string(line.substr(0, i));
    auto bad = [&] {
      return absl::InvalidArgumentError(absl::StrCat("unparsable sample line: ", line));
    };
    if (s.name.empty()) return bad();
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const size_t name_begin = i;
        while (i < line.size() && IsNameChar(line[i])) ++i;
        const std::string label(line.substr(name_begin, i - name_begin));
        if (label.empty() || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') {
          return bad();
        }
        i += 2;
        std::string value;
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\' && i + 1 < line.size()) {
            ++i;
            value += line[i] == 'n' ? '\n' : line[i];
          } else {
            value += line[i];
          }
          ++i;
        }
        if (i >= line.size()) return bad();
        ++i;  // closing quote
        s.labels[label] = value;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size()) return bad();
      ++i;  // '}'
    }
    if (i >= line.size() || line[i] != ' ') return bad();
    std::vector<std::string> rest = absl::StrSplit(line.substr(i + 1), ' ', absl::SkipEmpty());
    if (rest.empty()) return bad();
    s.value = rest[0];
    samples.push_back(std::move(s));
  }
  return samples;
}

std::set<std::string> CairnMetricNames(const std::string& promql) {
  static const std::set<std::string> kLabelListWords = {"by",       "without",    "on",
                                                        "ignoring", "group_left", "group_right"};
  std::set<std::string> names;
  int braces = 0;  // inside {...}: label matchers
  size_t i = 0;
  while (i < promql.size()) {
    const char c = promql[i];
    if (c == '"' || c == '\'') {  // skip string literals (label values)
      ++i;
      while (i < promql.size() && promql[i] != c) i += promql[i] == '\\' ? 2 : 1;
      ++i;
      continue;
    }
    if (c == '{') ++braces;
    if (c == '}') --braces;
    if (!IsNameChar(c)) {
      ++i;
      continue;
    }
    const size_t begin = i;
    while (i < promql.size() && IsNameChar(promql[i])) ++i;
    const std::string word = promql.substr(begin, i - begin);
    if (kLabelListWords.count(word) > 0) {  // "by (a, b)": label names up to ')'
      size_t open = i;
      while (open < promql.size() && promql[open] == ' ') ++open;
      if (open < promql.size() && promql[open] == '(') {
        const size_t close = promql.find(')', open);
        i = close == std::string::npos ? promql.size() : close + 1;
      }
      continue;
    }
    if (braces == 0 && word.rfind("cairn_", 0) == 0) names.insert(word);
  }
  return names;
}

}  // namespace cairn::testing
