#include "common/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace cairn {
namespace {

constexpr int kMinBarColumns = 10;
constexpr int kDefaultWidth = 80;

// printf into a std::string (numbers with a fixed precision).
std::string Format(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string Format(const char* format, ...) {
  char buffer[128];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  return std::string(buffer, n < 0 ? 0 : std::min<size_t>(n, sizeof(buffer) - 1));
}

bool HasTotal(const ProgressState& s) { return s.total > 0; }

double Percent(const ProgressState& s) {
  if (!HasTotal(s)) return 0;
  return 100.0 * static_cast<double>(std::clamp<int64_t>(s.step, 0, s.total)) /
         static_cast<double>(s.total);
}

std::string EpochText(const ProgressFields& f, const char* separator) {
  if (f.epoch < 0) return "";
  return f.num_epochs > 0 ? absl::StrCat("epoch", separator, f.epoch + 1, "/", f.num_epochs)
                          : absl::StrCat("epoch", separator, f.epoch + 1);
}

// The bar's inside: `columns` characters of '=' with a '>' at the head.
std::string Bar(double fraction, int columns) {
  const int filled = static_cast<int>(std::floor(fraction * columns));
  std::string bar(static_cast<size_t>(columns), ' ');
  for (int i = 0; i < filled && i < columns; ++i) bar[i] = '=';
  if (filled < columns) bar[filled] = '>';
  return absl::StrCat("[", bar, "]");
}

int TerminalWidth(int requested) {
  if (requested > 0) return requested;
  int columns = 0;
  const char* env = std::getenv("COLUMNS");
  if (env != nullptr && absl::SimpleAtoi(env, &columns) && columns > 0) return columns;
  return kDefaultWidth;
}

}  // namespace

std::string FormatEta(double seconds) {
  if (seconds < 0 || !std::isfinite(seconds)) return "--";
  const int64_t total = static_cast<int64_t>(std::llround(seconds));
  const int64_t h = total / 3600, m = (total / 60) % 60, s = total % 60;
  if (h > 0) {
    return Format("%lldh%02lldm%02llds", static_cast<long long>(h), static_cast<long long>(m),
                  static_cast<long long>(s));
  }
  if (m > 0) return Format("%lldm%02llds", static_cast<long long>(m), static_cast<long long>(s));
  return absl::StrCat(s, "s");
}

std::string RenderProgressBar(const std::string& label, const ProgressState& state, int width) {
  const ProgressFields& f = state.fields;
  std::string head = label;
  const std::string epoch = EpochText(f, " ");
  if (!epoch.empty()) absl::StrAppend(&head, head.empty() ? "" : " ", epoch);

  std::string tail;
  if (HasTotal(state)) {
    tail = absl::StrCat(Format("%3.0f%%", std::floor(Percent(state))), " ", state.step, "/",
                        state.total);
  } else {
    tail = absl::StrCat("step ", state.step);
  }
  if (f.examples_per_second >= 0) {
    absl::StrAppend(&tail, Format(" %.1f ex/s", f.examples_per_second));
  }
  if (!std::isnan(f.loss)) absl::StrAppend(&tail, Format(" loss %.4f", f.loss));
  absl::StrAppend(&tail, " ETA ", FormatEta(state.eta_seconds));

  if (!HasTotal(state)) return head.empty() ? tail : absl::StrCat(head, " ", tail);
  // head + " " + bar + " " + tail, the bar taking what is left.
  const int text = static_cast<int>(head.size() + (head.empty() ? 0 : 1) + 1 + tail.size());
  const int columns = std::max(kMinBarColumns, width - text - 2);
  const std::string bar = Bar(Percent(state) / 100.0, columns);
  return head.empty() ? absl::StrCat(bar, " ", tail) : absl::StrCat(head, " ", bar, " ", tail);
}

std::string RenderProgressLine(const std::string& event, const std::string& label,
                               const ProgressState& state) {
  const ProgressFields& f = state.fields;
  std::string line = event;
  if (!label.empty()) {
    absl::StrAppend(&line, " label=\"",
                    absl::StrReplaceAll(label, {{"\\", "\\\\"}, {"\"", "\\\""}}), "\"");
  }
  const std::string epoch = EpochText(f, "=");
  if (!epoch.empty()) absl::StrAppend(&line, " ", epoch);
  if (HasTotal(state)) {
    absl::StrAppend(&line, " step=", state.step, "/", state.total,
                    Format(" percent=%.1f", Percent(state)));
  } else {
    absl::StrAppend(&line, " step=", state.step);
  }
  if (f.examples_per_second >= 0) {
    absl::StrAppend(&line, Format(" examples_per_second=%.1f", f.examples_per_second));
  }
  if (!std::isnan(f.loss)) absl::StrAppend(&line, Format(" loss=%.4f", f.loss));
  if (state.eta_seconds >= 0 && std::isfinite(state.eta_seconds)) {
    absl::StrAppend(&line, " eta_seconds=", std::llround(state.eta_seconds));
  }
  return line;
}

ProgressBar::ProgressBar(std::FILE* out, Options options)
    : out_(out),
      options_(std::move(options)),
      time_(options_.time != nullptr ? options_.time : &real_time_),
      mode_(options_.mode),
      width_(TerminalWidth(options_.width)) {
  if (mode_ == Mode::kAuto) mode_ = isatty(fileno(out_)) ? Mode::kTerminal : Mode::kLog;
}

ProgressBar::~ProgressBar() {
  if (active_) Finish();
}

void ProgressBar::Update(int64_t step, int64_t total, const ProgressFields& fields) {
  const absl::Time now = time_->Now();
  if (!active_ || step < state_.step) {  // first update, or steps restarted
    rate_start_ = now;
    rate_start_step_ = step;
  }
  active_ = true;
  state_.step = step;
  state_.total = total;
  state_.fields = fields;
  state_.eta_seconds = -1;
  const double elapsed = absl::ToDoubleSeconds(now - rate_start_);
  if (total > 0 && step > rate_start_step_ && elapsed > 0) {
    const double steps_per_second = static_cast<double>(step - rate_start_step_) / elapsed;
    state_.eta_seconds = static_cast<double>(std::max<int64_t>(0, total - step)) / steps_per_second;
  } else if (total > 0 && step >= total) {
    state_.eta_seconds = 0;
  }

  const bool last = total > 0 && step >= total;
  const absl::Duration interval =
      mode_ == Mode::kTerminal ? options_.redraw_interval : options_.log_interval;
  if (last || now - last_draw_ >= interval) {
    last_draw_ = now;
    Draw(/*final_draw=*/false);
  }
}

void ProgressBar::Finish() {
  if (!active_) return;
  if (mode_ == Mode::kTerminal) {
    Draw(/*final_draw=*/true);
  } else {
    const std::string line = RenderProgressLine("done", options_.label, state_);
    std::fprintf(out_, "%s\n", line.c_str());
    std::fflush(out_);
  }
  active_ = false;
  last_length_ = 0;
  last_draw_ = absl::InfinitePast();
}

void ProgressBar::Draw(bool final_draw) {
  if (mode_ == Mode::kLog) {
    const std::string line = RenderProgressLine("progress", options_.label, state_);
    std::fprintf(out_, "%s\n", line.c_str());
  } else {
    // One column spare: writing the last column makes some terminals wrap.
    const std::string line = RenderProgressBar(options_.label, state_, width_ - 1);
    // Blank out what a longer previous line left on screen.
    const size_t pad = last_length_ > line.size() ? last_length_ - line.size() : 0;
    std::fprintf(out_, "\r%s%s%s", line.c_str(), std::string(pad, ' ').c_str(),
                 final_draw ? "\n" : "");
    last_length_ = line.size();
  }
  std::fflush(out_);
}

}  // namespace cairn
