// Workers of a TestCluster through the client library: one, or `n` at once
// (the start-up barrier needs them all). For Catch2 tests: a failed connect
// fails the test with the client's error.
#ifndef CAIRN_TESTS_INTEGRATION_CONNECT_WORKERS_H_
#define CAIRN_TESTS_INTEGRATION_CONNECT_WORKERS_H_

#include <catch2/catch.hpp>
#include <future>
#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "tests/integration/test_cluster.h"
#include "worker/client/client.h"

namespace cairn::testing {

// `busy_poll`: ClientOptions::busy_poll.
inline absl::StatusOr<std::unique_ptr<Client>> Connect(
    const TestCluster& cluster, int id, absl::Duration timeout = absl::Seconds(30),
    absl::Duration rpc_deadline = absl::Seconds(20),
    absl::Duration busy_poll = absl::ZeroDuration()) {
  ClientOptions options;
  options.coordinator = cluster.coordinator_address();
  options.worker_id = id;
  options.connect_timeout = timeout;
  options.rpc_deadline = rpc_deadline;
  options.busy_poll = busy_poll;
  return Client::Connect(options);
}

// Workers 0..n-1, connected concurrently.
inline std::vector<std::unique_ptr<Client>> ConnectAll(
    const TestCluster& cluster, int n, absl::Duration rpc_deadline = absl::Seconds(20),
    absl::Duration timeout = absl::Seconds(30),
    absl::Duration busy_poll = absl::ZeroDuration()) {
  std::vector<std::future<absl::StatusOr<std::unique_ptr<Client>>>> pending;
  for (int i = 0; i < n; ++i) {
    pending.push_back(
        std::async(std::launch::async, [&cluster, i, rpc_deadline, timeout, busy_poll] {
          return Connect(cluster, i, timeout, rpc_deadline, busy_poll);
        }));
  }
  std::vector<std::unique_ptr<Client>> clients;
  for (auto& p : pending) {
    auto c = p.get();
    INFO(c.status().message());
    REQUIRE(c.ok());
    clients.push_back(std::move(*c));
  }
  return clients;
}

}  // namespace cairn::testing

#endif  // CAIRN_TESTS_INTEGRATION_CONNECT_WORKERS_H_
