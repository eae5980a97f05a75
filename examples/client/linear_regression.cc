// A training loop of one's own through Cairn's client library, without
// cairn-worker: least-squares regression of y = t . x on one dense table
// (any shape; its elements are the weights), with a known target t, so the
// run shows whether the job trained.
//
// Each step pulls the weights, computes the gradient of the batch's mean
// squared error (1/2 (w . x - y)^2) on this worker's own random inputs,
// pushes it and ends the iteration on every server. The servers apply the
// table's optimizer; under BSP with several workers they apply the mean of
// the workers' gradients once per iteration.
//
//   cairn-client-example --coordinator 127.0.0.1:7070 --table w --steps 300
//
// Prints the loss every 50 steps, then the weights' largest distance from
// the target. Exit codes: 0 done, 1 a call failed (the message names it),
// 2 bad flags.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cairn/v1/types.pb.h"  // TableSpec: a table's kind and shape
#include "common/daemon.h"
#include "worker/client/client.h"

namespace {

int Fail(const char* what, const absl::Status& status) {
  std::fprintf(stderr, "cairn-client-example: %s: %s\n", what, status.ToString().c_str());
  return 1;
}

// The weights the data is made from: t_j = 0.5 (j + 1), j = 0 .. n-1.
float Target(size_t j) { return 0.5f * static_cast<float>(j + 1); }

}  // namespace

int main(int argc, char** argv) {
  cairn::ClientOptions options;
  std::string table = "w";
  int steps = 300;
  int batch = 32;
  CLI::App app{"Least-squares regression through Cairn's client library"};
  app.add_option("--coordinator", options.coordinator, "coordinator host:port")
      ->capture_default_str();
  app.add_option("--worker-id", options.worker_id, "this worker's id (-1: the coordinator picks)")
      ->capture_default_str();
  app.add_option("--table", table, "the dense table holding the weights")->capture_default_str();
  app.add_option("--steps", steps, "iterations to train")->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch", batch, "examples per step")->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  cairn::TuneAllocator();  // reuse the parameter-sized buffers (client.h)
  // Registers with the coordinator and waits for the job's start-up barrier.
  absl::StatusOr<std::unique_ptr<cairn::Client>> connected = cairn::Client::Connect(options);
  if (!connected.ok()) return Fail("connect", connected.status());
  cairn::Client& client = **connected;
  absl::StatusOr<const cairn::v1::TableSpec*> spec = client.Table(table);
  if (!spec.ok()) return Fail("table", spec.status());
  if ((*spec)->kind() != cairn::v1::TABLE_KIND_DENSE) {
    return Fail("table", absl::InvalidArgumentError("`" + table + "` is not a dense table"));
  }
  size_t n = 1;
  for (int64_t d : (*spec)->shape()) n *= static_cast<size_t>(d);

  std::vector<float> w(n);     // the weights, as pulled
  std::vector<float> grad(n);  // kept unchanged until its push returns
  std::vector<float> x(n);
  std::mt19937 rng(1234 + client.worker_id());
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (int step = 0; step < steps; ++step) {
    // BSP: waits until every worker's push of the last iteration is applied.
    if (absl::Status s = client.PullAndWait({{table, absl::MakeSpan(w)}}, {}); !s.ok()) {
      return Fail("pull", s);
    }
    std::fill(grad.begin(), grad.end(), 0.0f);
    double loss = 0;
    for (int b = 0; b < batch; ++b) {
      float err = 0;
      for (size_t j = 0; j < n; ++j) {
        x[j] = uniform(rng);
        err += (w[j] - Target(j)) * x[j];  // w . x - y, with y = t . x
      }
      loss += 0.5 * err * err / batch;
      for (size_t j = 0; j < n; ++j) grad[j] += err * x[j] / static_cast<float>(batch);
    }
    if (step % 50 == 0) std::printf("step %d loss %.6g\n", step, loss);
    // The push, and the end of this iteration on every server.
    if (absl::Status s = client.PushAndClock({{table, grad}}, {}); !s.ok()) {
      return Fail("push", s);
    }
  }
  if (absl::Status s = client.PullAndWait({{table, absl::MakeSpan(w)}}, {}); !s.ok()) {
    return Fail("pull", s);
  }
  double distance = 0;
  for (size_t j = 0; j < n; ++j) distance = std::max(distance, std::fabs(double{w[j]} - Target(j)));
  std::printf("after %d steps: max |w - target| = %.6g over %zu weights\n", steps, distance, n);
  // Leaves the job: the servers stop counting this worker's clock.
  if (absl::Status s = client.Finish(); !s.ok()) return Fail("finish", s);
  return 0;
}
