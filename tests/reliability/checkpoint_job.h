// The job the checkpoint tests run (fault scenario T2, T9), and what they
// need around it: two chaos workers pushing the oracle's workload, an
// observer that reads the values a (resumed) job starts from, the
// coordinator's checkpoint log lines, and the number of checkpoints in a
// server's store.
//
// The job has three workers: chaos workers 0 and 1 push the workload;
// worker 2, the observer, only pulls at the clock the job starts at and
// leaves. Under BSP nothing is applied at clock C before every live worker
// has finished C, so the observer's pull sees exactly the state the job
// started from, however far the chaos workers have run meanwhile.
//
// Not thread-safe; use from the test thread.
#ifndef CAIRN_TESTS_RELIABILITY_CHECKPOINT_JOB_H_
#define CAIRN_TESTS_RELIABILITY_CHECKPOINT_JOB_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/integration/test_cluster.h"
#include "tests/reliability/oracle.h"
#include "tests/reliability/workload.h"
#include "tests/testing/process.h"
#include "worker/client/client.h"

namespace cairn::reliability {

constexpr int kChaosWorkers = 2;  // worker ids 0 and 1
constexpr int kObserverId = 2;

// Dense 100000 floats ("dense") and sparse width 4 ("emb"): 100 keys, 10
// pushed per step; SGD, learning rate 1, zeros, aggregation sum.
Workload CheckpointWorkload();

// The `tables:` entries of CheckpointWorkload() (YAML list items, two-space
// indented), for any job that runs chaos workers; another `dense_size`
// (the Workload's must match) with dense chunks of `chunk_size` floats.
std::string WorkloadTablesYaml(int64_t dense_size = 100000, int64_t chunk_size = 5000);

struct CheckpointJobOptions {
  std::string checkpoint_dir;
  int64_t every_clocks = 2;
  int keep = 3;
  std::string resume = "none";  // none | latest | <clock>
};

// The YAML of the job: 2 servers, 3 workers (above), 8 partitions, BSP,
// the tables of CheckpointWorkload(), and `options`' checkpoint section.
// The coordinator keeps no membership state (cluster.state_dir: none): these
// tests restart whole jobs from checkpoints, and a coordinator that restored
// the killed job's members would first wait lease_timeout for them to
// re-attach (coordinator restarts are fault scenario T4's subject).
std::string CheckpointJobYaml(const CheckpointJobOptions& options);

// The chaos workers of `cluster`, running until their clock reaches `steps`,
// each appending its history to <history_dir>/worker-<id>.jsonl.
absl::StatusOr<std::vector<std::unique_ptr<testing::Subprocess>>> SpawnChaosWorkers(
    const testing::TestCluster& cluster, int64_t steps, const std::string& history_dir);

// One chaos worker of `cluster` asking for id `id`, pushing the workload's
// tables ("dense", "emb": 10 of 100 rows per step) until its clock reaches
// `steps`, its history in <history_dir>/worker-<id>.jsonl, its logs in
// <cluster dir>/chaos-worker-<id>.*; `extra_args` go last on its command
// line (e.g. {"--seconds", "20"}).
absl::StatusOr<std::unique_ptr<testing::Subprocess>> SpawnChaosWorker(
    const testing::TestCluster& cluster, int id, int64_t steps, const std::string& history_dir,
    const std::vector<std::string>& extra_args = {});

// Every table of `w` as pulled through `client` (no cache): the dense table
// whole, the sparse table at every key of the universe.
absl::StatusOr<JobValues> PullValues(Client& client, const Workload& w);

// What the observer saw: the clock the job gave it and the values there.
struct Observation {
  int64_t clock = -1;
  JobValues values;
};

// Connects as worker kObserverId (blocks at the start-up barrier until the
// chaos workers joined), pulls every value and leaves the job.
absl::StatusOr<Observation> ObserveAndLeave(const testing::TestCluster& cluster,
                                            const Workload& w);

// Connects as a worker that joins after the others left (no id asked, no
// cache) and pulls every value: the job's final state.
absl::StatusOr<JobValues> ReadFinalValues(const testing::TestCluster& cluster, const Workload& w);

// Stops every server and the coordinator of `cluster` with SIGTERM and waits
// up to 20 s each. FailedPrecondition naming the first that did not exit 0,
// with its stderr's tail.
absl::Status StopGracefully(testing::TestCluster& cluster);

// A checkpoint record as the coordinator logged it.
struct LoggedRecord {
  int64_t clock = -1;
  uint64_t record = 0;
};

// Each "checkpoint at clock C complete: ... recorded as checkpoint record R"
// line of a coordinator's stderr, in order.
std::vector<LoggedRecord> CompletedCheckpoints(const std::string& coordinator_stderr);

// The "resuming from checkpoint record R at clock C" line, if any.
std::optional<LoggedRecord> ResumedFrom(const std::string& coordinator_stderr);

// One checkpoint (manifest) of a server's store.
struct StoredCheckpoint {
  uint64_t id = 0;
  int64_t clock = 0;
};

// The checkpoints in the store <checkpoint_dir>/server-<id>, by ascending
// id; none when the store does not exist. Errors from CheckpointReader
// otherwise.
absl::StatusOr<std::vector<StoredCheckpoint>> StoreCheckpoints(const std::string& checkpoint_dir,
                                                               uint32_t server_id);

// "id@clock" of each, space-separated, for messages.
std::string ToString(const std::vector<StoredCheckpoint>& checkpoints);

// ExpectedAtClock(clock) of the chaos workers, computed incrementally from
// the last clock asked when the clock grows (the crash test asks for ever
// larger clocks).
class ExpectedStates {
 public:
  explicit ExpectedStates(Workload w) : workload_(std::move(w)) {}
  const JobValues& At(int64_t clock);

 private:
  Workload workload_;
  int64_t clock_ = -1;
  JobValues values_;
};

// True when both sides hold the same float bits for every element (sparse:
// `actual` may list more keys, which must then hold +0).
bool BitwiseEqual(const JobValues& expected, const JobValues& actual);

}  // namespace cairn::reliability

#endif  // CAIRN_TESTS_RELIABILITY_CHECKPOINT_JOB_H_
