// A running job to observe: a TestCluster (coordinator and servers) plus one
// cairn-worker process training the built-in MLP on Fashion-MNIST, with the
// /metrics endpoint of every process.
#ifndef CAIRN_TESTS_TOOLS_OBSERVED_JOB_H_
#define CAIRN_TESTS_TOOLS_OBSERVED_JOB_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/integration/test_cluster.h"
#include "tests/testing/process.h"

namespace cairn::testing {

// One process's /metrics.
struct MetricsEndpoint {
  std::string role;  // "coordinator", "server", "worker"
  int id = 0;        // server or worker id; 0 for the coordinator
  int port = 0;      // on 127.0.0.1
};

class ObservedJob {
 public:
  // Starts `num_servers` servers and one worker (BSP, 16 partitions, an MLP
  // 784-32-10 with batch 64 and enough epochs to outlast any test), and
  // returns once the worker has completed at least one step.
  static absl::StatusOr<std::unique_ptr<ObservedJob>> Start(const std::string& name,
                                                            int num_servers);

  TestCluster& cluster() { return *cluster_; }
  Subprocess& worker() { return *worker_; }
  // Coordinator, then servers by id, then the worker.
  const std::vector<MetricsEndpoint>& endpoints() const { return endpoints_; }

  // The tail of every process's stderr, for failure messages.
  std::string Logs() const;

 private:
  std::unique_ptr<TestCluster> cluster_;
  std::unique_ptr<Subprocess> worker_;
  std::vector<MetricsEndpoint> endpoints_;
};

}  // namespace cairn::testing

#endif  // CAIRN_TESTS_TOOLS_OBSERVED_JOB_H_
