#include "common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace cairn {

void InitLogging(const std::string& component, const std::string& level) {
  auto logger = spdlog::stderr_color_mt(component);
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %n %L %v");
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace cairn
