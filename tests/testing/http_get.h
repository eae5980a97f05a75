// The tests' name for common/http_get.h's HttpGet.
#ifndef CAIRN_TESTS_TESTING_HTTP_GET_H_
#define CAIRN_TESTS_TESTING_HTTP_GET_H_

#include "common/http_get.h"

namespace cairn::testing {
using ::cairn::HttpGet;
}  // namespace cairn::testing

#endif  // CAIRN_TESTS_TESTING_HTTP_GET_H_
