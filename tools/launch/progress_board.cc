#include "tools/launch/progress_board.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace cairn::launch {
namespace {

// Splits "A/B" into two integers; B absent leaves *b unchanged.
bool ParseFraction(absl::string_view text, int64_t* a, int64_t* b) {
  const size_t slash = text.find('/');
  if (slash == absl::string_view::npos) return absl::SimpleAtoi(text, a);
  return absl::SimpleAtoi(text.substr(0, slash), a) &&
         absl::SimpleAtoi(text.substr(slash + 1), b);
}

// Reads a value at the start of `*rest`: a "quoted string" (backslash
// escapes) or a bare word up to the next space. False on an unterminated
// quote.
bool TakeValue(absl::string_view* rest, std::string* value) {
  value->clear();
  if (!absl::ConsumePrefix(rest, "\"")) {
    const size_t end = std::min(rest->find(' '), rest->size());
    *value = std::string(rest->substr(0, end));
    rest->remove_prefix(end);
    return true;
  }
  for (size_t i = 0; i < rest->size(); ++i) {
    const char c = (*rest)[i];
    if (c == '\\' && i + 1 < rest->size()) {
      value->push_back((*rest)[++i]);
    } else if (c == '"') {
      rest->remove_prefix(i + 1);
      return true;
    } else {
      value->push_back(c);
    }
  }
  return false;
}

}  // namespace

std::optional<ProgressLine> ParseProgressLine(absl::string_view line) {
  ProgressLine out;
  absl::string_view rest = line;
  if (absl::ConsumePrefix(&rest, "progress ")) {
    out.event = "progress";
  } else if (absl::ConsumePrefix(&rest, "done ")) {
    out.event = "done";
  } else {
    return std::nullopt;
  }
  bool has_step = false;
  while (!rest.empty()) {
    if (absl::ConsumePrefix(&rest, " ")) continue;
    const size_t eq = rest.find('=');
    if (eq == absl::string_view::npos) return std::nullopt;
    const absl::string_view key = rest.substr(0, eq);
    if (key.find(' ') != absl::string_view::npos) return std::nullopt;
    rest.remove_prefix(eq + 1);
    std::string value;
    if (!TakeValue(&rest, &value)) return std::nullopt;
    ProgressFields& f = out.state.fields;
    bool ok = true;
    if (key == "label") {
      out.label = value;
    } else if (key == "epoch") {
      int64_t epoch = 0;
      ok = ParseFraction(value, &epoch, &f.num_epochs);
      f.epoch = epoch - 1;  // the line counts epochs from 1
    } else if (key == "step") {
      ok = ParseFraction(value, &out.state.step, &out.state.total);
      has_step = ok;
    } else if (key == "examples_per_second") {
      ok = absl::SimpleAtod(value, &f.examples_per_second);
    } else if (key == "loss") {
      ok = absl::SimpleAtod(value, &f.loss);
    } else if (key == "eta_seconds") {
      ok = absl::SimpleAtod(value, &out.state.eta_seconds);
    }
    if (!ok) return std::nullopt;
  }
  if (!has_step) return std::nullopt;
  return out;
}

void ProgressBoard::Update(int worker, const ProgressLine& line) { latest_[worker] = line; }

ProgressState ProgressBoard::Combined() const {
  ProgressState out;
  if (latest_.empty()) return out;
  out.step = std::numeric_limits<int64_t>::max();
  double rate = 0, loss_sum = 0;
  int rates = 0, losses = 0;
  for (const auto& [worker, line] : latest_) {
    const ProgressState& s = line.state;
    const ProgressFields& f = s.fields;
    out.step = std::min(out.step, s.step);
    out.total = std::max(out.total, s.total);
    if (f.epoch >= 0) {
      out.fields.epoch = out.fields.epoch < 0 ? f.epoch : std::min(out.fields.epoch, f.epoch);
    }
    out.fields.num_epochs = std::max(out.fields.num_epochs, f.num_epochs);
    if (f.examples_per_second >= 0) {
      rate += f.examples_per_second;
      ++rates;
    }
    if (!std::isnan(f.loss)) {
      loss_sum += f.loss;
      ++losses;
    }
    out.eta_seconds = std::max(out.eta_seconds, s.eta_seconds);
  }
  if (rates > 0) out.fields.examples_per_second = rate;
  if (losses > 0) out.fields.loss = loss_sum / losses;
  return out;
}

std::string ProgressBoard::Render(int width) const {
  if (latest_.empty()) return "";
  const std::string label = latest_.size() == 1 && !latest_.begin()->second.label.empty()
                                ? latest_.begin()->second.label
                                : absl::StrCat(latest_.size(), " workers");
  return RenderProgressBar(label, Combined(), width);
}

}  // namespace cairn::launch
