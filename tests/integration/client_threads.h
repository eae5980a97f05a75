// Helpers for integration tests that drive several Cairn clients from test
// threads against a TestCluster: connecting them all at once (the start-up
// barrier needs every worker), and collecting failures from worker threads
// (Catch2 assertions are not thread-safe, so threads record and the test
// thread asserts).
#ifndef CAIRN_TESTS_INTEGRATION_CLIENT_THREADS_H_
#define CAIRN_TESTS_INTEGRATION_CLIENT_THREADS_H_

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "tests/integration/test_cluster.h"
#include "worker/client/client.h"

namespace cairn::testing {

inline ClientOptions TestClientOptions(const TestCluster& cluster, int id) {
  ClientOptions options;
  options.coordinator = cluster.coordinator_address();
  options.worker_id = id;
  options.connect_timeout = absl::Seconds(30);
  options.rpc_deadline = absl::Seconds(20);
  return options;
}

// Connects workers 0..n-1 concurrently; the first error, if any.
inline absl::StatusOr<std::vector<std::unique_ptr<Client>>> ConnectWorkers(
    const TestCluster& cluster, int n, uint64_t cache_bytes = 64ull << 20) {
  std::vector<std::future<absl::StatusOr<std::unique_ptr<Client>>>> pending;
  for (int i = 0; i < n; ++i) {
    pending.push_back(std::async(std::launch::async, [&cluster, i, cache_bytes] {
      ClientOptions options = TestClientOptions(cluster, i);
      options.cache_bytes = cache_bytes;
      return Client::Connect(options);
    }));
  }
  std::vector<std::unique_ptr<Client>> clients;
  absl::Status first;
  for (auto& p : pending) {
    absl::StatusOr<std::unique_ptr<Client>> c = p.get();
    if (!c.ok() && first.ok()) first = c.status();
    if (c.ok()) clients.push_back(*std::move(c));
  }
  if (!first.ok()) return first;
  return clients;
}

// Failures seen by worker threads. Thread-safe.
class Failures {
 public:
  void Add(std::string what) {
    absl::MutexLock lock(&mu_);
    if (list_.size() < 20) list_.push_back(std::move(what));
    ++count_;
  }
  void Check(const absl::Status& s, const std::string& what) {
    if (!s.ok()) Add(what + ": " + std::string(s.message()));
  }
  int count() const {
    absl::MutexLock lock(&mu_);
    return count_;
  }
  std::string Describe() const {
    absl::MutexLock lock(&mu_);
    std::string out;
    for (const std::string& s : list_) out += s + "\n";
    return out;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> list_;
  int count_ = 0;
};

}  // namespace cairn::testing

#endif  // CAIRN_TESTS_INTEGRATION_CLIENT_THREADS_H_
