// An HTTP GET for tests (libcurl), e.g. scraping a daemon's /metrics.
#ifndef CAIRN_TESTS_TESTING_HTTP_GET_H_
#define CAIRN_TESTS_TESTING_HTTP_GET_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace cairn::testing {

// GETs http://host:port/path and returns the body, within `timeout` in all.
// Errors: Unavailable (cannot connect), DeadlineExceeded (no answer in time),
// Internal (a status other than 200, quoting the status line).
absl::StatusOr<std::string> HttpGet(const std::string& host, int port, const std::string& path,
                                    absl::Duration timeout = absl::Seconds(10));

}  // namespace cairn::testing

#endif  // CAIRN_TESTS_TESTING_HTTP_GET_H_
