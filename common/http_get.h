// An HTTP GET (libcurl), e.g. reading a daemon's /metrics: cairnctl asks a
// server that cannot answer its Stats whether it is busy; tests scrape.
#ifndef CAIRN_COMMON_HTTP_GET_H_
#define CAIRN_COMMON_HTTP_GET_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace cairn {

// GETs http://host:port/path and returns the body, within `timeout` in all.
// Thread-safe (libcurl's global init runs once, at the first call).
// Errors: Unavailable (cannot connect), DeadlineExceeded (no answer in time),
// Internal (a status other than 200, quoting the status line).
absl::StatusOr<std::string> HttpGet(const std::string& host, int port, const std::string& path,
                                    absl::Duration timeout = absl::Seconds(10));

}  // namespace cairn

#endif  // CAIRN_COMMON_HTTP_GET_H_
