// Logging: spdlog, one stderr logger per process with the component's name in
// every line ("2026-11-29 10:00:00.123 server I msg").
#ifndef CAIRN_COMMON_LOG_H_
#define CAIRN_COMMON_LOG_H_

#include <spdlog/spdlog.h>

#include <string>

#include "absl/strings/string_view.h"

// Lets log lines format absl::string_view (Debian's Abseil does not alias
// std::string_view), e.g. a Status's message().
template <>
struct fmt::formatter<absl::string_view> : fmt::formatter<fmt::string_view> {
  auto format(absl::string_view s, fmt::format_context& ctx) const {
    return fmt::formatter<fmt::string_view>::format(fmt::string_view(s.data(), s.size()), ctx);
  }
};

namespace cairn {

// Sets the process's log pattern and level ("debug", "info", "warn", "error").
// Call once at start, before other threads exist.
void InitLogging(const std::string& component, const std::string& level = "info");

}  // namespace cairn

#define LOG_DEBUG(...) ::spdlog::debug(__VA_ARGS__)
#define LOG_INFO(...) ::spdlog::info(__VA_ARGS__)
#define LOG_WARN(...) ::spdlog::warn(__VA_ARGS__)
#define LOG_ERROR(...) ::spdlog::error(__VA_ARGS__)

#endif  // CAIRN_COMMON_LOG_H_
