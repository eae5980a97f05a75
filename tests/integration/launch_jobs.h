// Small Fashion-MNIST jobs for the cairn-launch tests.
#ifndef CAIRN_TESTS_INTEGRATION_LAUNCH_JOBS_H_
#define CAIRN_TESTS_INTEGRATION_LAUNCH_JOBS_H_

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"

namespace cairn {

// 2 servers, 2 workers, BSP, the MLP 784-32-10, batch 64 per worker (an
// effective batch of 128 under BSP) on Fashion-MNIST: 468 steps per epoch and
// worker, capped at `max_steps` (0: no cap).
inline std::string TinyJob(int64_t max_steps = 60, int epochs = 1) {
  return absl::StrCat(R"(
cluster:
  servers: 2
  workers: 2
  partitions: 8
  lease_timeout: 5s
  heartbeat_interval: 200ms
  startup_timeout: 60s
consistency:
  mode: bsp
training:
  model: mlp
  layers: [784, 32, 10]
  batch_size: 64
  epochs: )", epochs, R"(
  max_steps: )", max_steps, R"(
  seed: 1
  data_dir: /usr/share/datasets/fashion-mnist
  device: cpu
  optimizer:
    type: sgd
    learning_rate: 0.1
    momentum: 0.9
)");
}

}  // namespace cairn

#endif  // CAIRN_TESTS_INTEGRATION_LAUNCH_JOBS_H_
