// checkpoint_bench: how close Cairn's checkpoint store runs to the RocksDB it
// is built on.
//
// Builds one dense table of --model-mib MiB of float32 values (SGD, so no
// optimizer slots, unless --optimizer adam adds two slots per element), split
// into the job's default 64 partitions of 64 KiB chunks, exports every
// partition (Table::ExportPartition), and in the same run over the same bytes
// times, --repeats times each, on a fresh store every time:
//   Cairn write   CheckpointWriter::Open + Write of every partition (encode,
//                 XXH64, unsynced 64 MiB batches, a synced last batch
//                 with the manifest, Flush)
//   Cairn read    CheckpointReader::Open + Latest + ReadPartition of every
//                 partition (XXH64 verified, decoded into PartitionRows)
//   raw write     DB::Open with the writer's options, one WriteBatch of the
//                 already encoded partition values under the same keys,
//                 sync=true, then Flush as the writer does; once more with
//                 Cairn's manifest and worker state values (pre-encoded) in
//                 the batch too, so it holds exactly Cairn's keys and values;
//                 and once more without the manifest and without the Flush
//   raw read      DB::OpenForReadOnly with the reader's options + Get of
//                 every value (verify_checksums, as the reader)
//   memcpy        the encoded values into one preallocated buffer: a floor
// and, to show where Cairn's time goes, EncodeRows, XXH64 and DecodeRows of
// every partition alone. Prints medians as markdown tables: seconds are wall
// time, MB/s counts the encoded partition values (1 MB = 1e6 bytes), CPU s is
// the process's CPU time (all threads), faults the process's minor page faults
// (fresh 4 KiB pages mapped and zeroed), Cairn/raw is Cairn's MB/s over the
// raw reference's (values only) for the same operation. Holds about six times
// the model in memory.
//
// Stores live under a fresh directory in --tmpdir ($TMPDIR, else /tmp), removed
// at the end. Reads come from the page cache the writes just filled; nothing
// here drops caches. Single-threaded but for RocksDB's own background flush;
// run on an idle machine for stable numbers.
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cairn/v1/types.pb.h"
#include "common/config/job_config.h"
#include "common/daemon.h"
#include "common/status_macros.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/write_batch.h"
#include "server/checkpoint/checkpoint_codec.h"
#include "server/checkpoint/checkpoint_format.h"
#include "server/checkpoint/checkpoint_reader.h"
#include "server/checkpoint/checkpoint_writer.h"
#include "common/rocksdb_status.h"
#include "server/shard/table.h"

namespace cairn {
namespace {

using checkpoint::CheckpointReader;
using checkpoint::CheckpointWriter;
using checkpoint::Manifest;
using checkpoint::PartitionData;
using checkpoint::TableShape;
using checkpoint::WorkerState;

constexpr uint32_t kPartitions = 64;   // the job config's default
constexpr int64_t kRowFloats = 1024;   // the dense table is [rows x 1024]
constexpr uint64_t kCheckpointId = 1;  // the id a fresh writer gives its first checkpoint

// Wall and CPU seconds of one timed operation. CPU counts every thread of
// the process (RocksDB flushes on a background thread), user and system, so
// it does not include time spent waiting for the disk or for a core another
// process holds.
struct Sample {
  double wall_s = 0;
  double cpu_s = 0;
  long minor_faults = 0;  // pages the kernel mapped and zeroed for the process
};

class Stopwatch {
 public:
  Stopwatch()
      : wall_start_(std::chrono::steady_clock::now()),
        cpu_start_(ProcessCpuSeconds()),
        faults_start_(MinorFaults()) {}
  Sample Elapsed() const {
    return {std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start_).count(),
            ProcessCpuSeconds() - cpu_start_, MinorFaults() - faults_start_};
  }

 private:
  static double ProcessCpuSeconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }
  static long MinorFaults() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt;
  }
  std::chrono::steady_clock::time_point wall_start_;
  double cpu_start_;
  long faults_start_;
};

// A fresh directory, removed with everything in it on destruction.
class ScratchDir {
 public:
  static absl::StatusOr<ScratchDir> Create(const std::string& parent) {
    std::string pattern =
        (std::filesystem::path(parent) / "cairn-checkpoint-bench-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      return absl::UnavailableError(
          absl::StrCat("cannot create a temporary directory under ", parent, ": ",
                       std::strerror(errno)));
    }
    return ScratchDir(std::move(pattern));
  }
  ScratchDir(ScratchDir&& other) noexcept : path_(std::exchange(other.path_, "")) {}
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// The checkpointed model and the same bytes as raw RocksDB keys and values.
struct Model {
  v1::TableSpec spec;
  int slots_per_element = 0;
  std::vector<PartitionData> partitions;
  WorkerState workers;
  std::vector<std::string> keys;     // PartitionKey(kCheckpointId, table, partition)
  std::vector<std::string> encoded;  // EncodeRows of each partition
  // The rest of Cairn's batch, encoded as the writer does: its manifest and
  // worker state values under their keys.
  std::vector<std::pair<std::string, std::string>> bookkeeping;
  uint64_t value_bytes = 0;          // floats of values and slots, in bytes
  uint64_t encoded_bytes = 0;        // sum of encoded partition sizes
};

std::vector<TableShape> Tables(const Model& m) {
  return {checkpoint::ShapeOf(m.spec, m.slots_per_element)};
}

absl::StatusOr<Model> MakeModel(size_t mib, const std::string& optimizer) {
  Model m;
  const int64_t elements = static_cast<int64_t>(mib) * (int64_t{1} << 20) / 4;
  m.spec.set_name("W");
  m.spec.set_id(0);
  m.spec.set_kind(v1::TABLE_KIND_DENSE);
  m.spec.add_shape(elements / kRowFloats);
  m.spec.add_shape(kRowFloats);
  m.spec.set_chunk_size(DefaultChunkSize(elements));
  v1::OptimizerSpec* opt = m.spec.mutable_optimizer();
  opt->set_kind(optimizer == "adam" ? v1::OPTIMIZER_KIND_ADAM : v1::OPTIMIZER_KIND_SGD);
  opt->set_learning_rate(0.01f);
  opt->set_beta1(0.9f);
  opt->set_beta2(0.999f);
  opt->set_epsilon(1e-8f);
  // Random values, so RocksDB's block compression finds no easy win.
  m.spec.mutable_init()->set_kind(v1::INIT_KIND_UNIFORM);
  m.spec.mutable_init()->set_scale(0.5f);
  m.spec.mutable_init()->set_seed(7);
  m.spec.set_non_finite(v1::NON_FINITE_POLICY_REJECT);

  ASSIGN_OR_RETURN(std::unique_ptr<Table> table,
                   Table::Create(m.spec, kPartitions, std::vector<bool>(kPartitions, true)));
  m.slots_per_element = table->SlotsPerElement();
  for (uint32_t p = 0; p < kPartitions; ++p) {
    ASSIGN_OR_RETURN(PartitionRows rows, table->ExportPartition(p));
    m.value_bytes += (rows.values.size() + rows.slots.size()) * sizeof(float);
    m.keys.push_back(checkpoint::PartitionKey(kCheckpointId, m.spec.id(), p));
    m.encoded.push_back(checkpoint::EncodeRows(rows));
    m.encoded_bytes += m.encoded.back().size();
    m.partitions.push_back({m.spec.id(), p, std::move(rows)});
  }
  m.workers.clocks = {{0, 1}};
  m.workers.sequence_floors = {{0, 1}};
  Manifest manifest;
  manifest.id = kCheckpointId;
  manifest.clock = 1;
  manifest.num_partitions = kPartitions;
  manifest.unix_millis = absl::ToUnixMillis(absl::Now());
  manifest.tables = Tables(m);
  for (size_t i = 0; i < m.partitions.size(); ++i) {
    const PartitionData& p = m.partitions[i];
    manifest.partitions.push_back({p.table_id, p.partition, p.rows.keys.size(),
                                   m.encoded[i].size(), checkpoint::Checksum(m.encoded[i])});
  }
  const std::string workers = checkpoint::EncodeWorkers(m.workers);
  manifest.workers_checksum = checkpoint::Checksum(workers);
  m.bookkeeping = {{checkpoint::WorkersKey(kCheckpointId), workers},
                   {checkpoint::ManifestKey(kCheckpointId), checkpoint::EncodeManifest(manifest)}};
  return m;
}

// The options CheckpointWriter::Open and CheckpointReader::Open use.
rocksdb::Options WriterOptions() {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.paranoid_checks = true;
  return options;
}
rocksdb::Options ReaderOptions() {
  rocksdb::Options options;
  options.create_if_missing = false;
  options.paranoid_checks = true;
  return options;
}

absl::StatusOr<Sample> CairnWrite(const Model& m, const std::string& dir) {
  const std::vector<TableShape> tables = Tables(m);
  std::vector<PartitionData> partitions = m.partitions;  // Write frees what it encodes
  const Stopwatch watch;
  ASSIGN_OR_RETURN(std::unique_ptr<CheckpointWriter> writer,
                   CheckpointWriter::Open(dir, /*server_id=*/0, /*keep=*/1));
  ASSIGN_OR_RETURN(Manifest manifest, writer->Write(/*clock=*/1, kPartitions, tables,
                                                    std::move(partitions), m.workers));
  const Sample sample = watch.Elapsed();
  if (manifest.id != kCheckpointId || manifest.partitions.size() != m.partitions.size()) {
    return absl::InternalError(absl::StrCat("checkpoint in ", dir, " has id ", manifest.id,
                                            " and ", manifest.partitions.size(),
                                            " partitions, expected id 1 and ",
                                            m.partitions.size()));
  }
  return sample;
}

absl::StatusOr<Sample> CairnRead(const Model& m, const std::string& dir) {
  std::vector<PartitionRows> rows;
  rows.reserve(m.partitions.size());
  const Stopwatch watch;
  ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReader> reader, CheckpointReader::Open(dir));
  ASSIGN_OR_RETURN(Manifest latest, reader->Latest());
  for (const PartitionData& p : m.partitions) {
    ASSIGN_OR_RETURN(PartitionRows r, reader->ReadPartition(latest, p.table_id, p.partition));
    rows.push_back(std::move(r));
  }
  const Sample sample = watch.Elapsed();
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!(rows[i] == m.partitions[i].rows)) {
      return absl::DataLossError(absl::StrCat(dir, ": partition ", m.partitions[i].partition,
                                              " read back differs from what was written"));
    }
  }
  return sample;
}

// What the raw reference's batch holds besides the encoded partition values.
enum class RawBatch { kPartitions, kWithBookkeeping };

absl::StatusOr<Sample> RawWrite(const Model& m, const std::string& dir, RawBatch contents,
                                bool flush) {
  const Stopwatch watch;
  rocksdb::DB* raw = nullptr;
  RETURN_IF_ERROR(FromRocksStatus(rocksdb::DB::Open(WriterOptions(), dir, &raw),
                                  absl::StrCat("open ", dir)));
  std::unique_ptr<rocksdb::DB> db(raw);
  rocksdb::WriteBatch batch;
  for (size_t i = 0; i < m.keys.size(); ++i) {
    RETURN_IF_ERROR(FromRocksStatus(batch.Put(m.keys[i], m.encoded[i]), "raw batch"));
  }
  if (contents == RawBatch::kWithBookkeeping) {
    for (const auto& [key, value] : m.bookkeeping) {
      RETURN_IF_ERROR(FromRocksStatus(batch.Put(key, value), "raw batch"));
    }
  }
  rocksdb::WriteOptions write_options;
  write_options.sync = true;
  RETURN_IF_ERROR(FromRocksStatus(db->Write(write_options, &batch), absl::StrCat("write ", dir)));
  if (flush) {
    RETURN_IF_ERROR(
        FromRocksStatus(db->Flush(rocksdb::FlushOptions()), absl::StrCat("flush ", dir)));
  }
  const Sample sample = watch.Elapsed();
  RETURN_IF_ERROR(FromRocksStatus(db->Close(), absl::StrCat("close ", dir)));
  return sample;
}

absl::StatusOr<Sample> RawRead(const Model& m, const std::string& dir) {
  std::vector<std::string> values(m.keys.size());
  const Stopwatch watch;
  rocksdb::DB* raw = nullptr;
  RETURN_IF_ERROR(FromRocksStatus(rocksdb::DB::OpenForReadOnly(ReaderOptions(), dir, &raw),
                                  absl::StrCat("open ", dir, " read-only")));
  std::unique_ptr<rocksdb::DB> db(raw);
  rocksdb::ReadOptions read_options;
  read_options.verify_checksums = true;
  for (size_t i = 0; i < m.keys.size(); ++i) {
    RETURN_IF_ERROR(FromRocksStatus(db->Get(read_options, m.keys[i], &values[i]),
                                    absl::StrCat("get partition ", i, " from ", dir)));
  }
  const Sample sample = watch.Elapsed();
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] != m.encoded[i]) {
      return absl::DataLossError(
          absl::StrCat(dir, ": value of partition ", i, " read back differs"));
    }
  }
  return sample;
}

// Every repeat's samples of each measurement.
struct Timings {
  std::vector<Sample> cairn_write, cairn_read, raw_write_flush, raw_write_whole, raw_write,
      raw_read, copy, encode, checksum, decode;
};

// Median wall and median CPU seconds (each over the repeats on its own); no faults.
Sample Median(const std::vector<Sample>& samples) {
  std::vector<double> wall, cpu;
  for (const Sample& s : samples) {
    wall.push_back(s.wall_s);
    cpu.push_back(s.cpu_s);
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  return {wall[wall.size() / 2], cpu[cpu.size() / 2]};
}

// One repeat of every measurement, each store in a fresh directory under `root`.
// Every timed write starts after sync(), so it does not pay for writeback or
// deletions the previous one left; Cairn and the raw references take turns
// going first.
absl::Status RunOnce(const Model& m, const std::string& root, int repeat, std::string* buffer,
                     Timings* t) {
  const auto cairn = [&]() -> absl::Status {
    const std::string dir = absl::StrCat(root, "/cairn-", repeat);
    sync();
    ASSIGN_OR_RETURN(Sample w, CairnWrite(m, dir));  // the writer is closed on return
    ASSIGN_OR_RETURN(Sample r, CairnRead(m, dir));
    t->cairn_write.push_back(w);
    t->cairn_read.push_back(r);
    std::filesystem::remove_all(dir);
    return absl::OkStatus();
  };
  const auto raw = [&]() -> absl::Status {
    std::string dir = absl::StrCat(root, "/raw-flush-", repeat);
    sync();
    ASSIGN_OR_RETURN(Sample w, RawWrite(m, dir, RawBatch::kPartitions, /*flush=*/true));
    ASSIGN_OR_RETURN(Sample r, RawRead(m, dir));
    t->raw_write_flush.push_back(w);
    t->raw_read.push_back(r);
    std::filesystem::remove_all(dir);
    dir = absl::StrCat(root, "/raw-whole-", repeat);
    sync();
    ASSIGN_OR_RETURN(Sample whole, RawWrite(m, dir, RawBatch::kWithBookkeeping, /*flush=*/true));
    t->raw_write_whole.push_back(whole);
    std::filesystem::remove_all(dir);
    dir = absl::StrCat(root, "/raw-", repeat);
    sync();
    ASSIGN_OR_RETURN(Sample unflushed, RawWrite(m, dir, RawBatch::kPartitions, /*flush=*/false));
    t->raw_write.push_back(unflushed);
    std::filesystem::remove_all(dir);
    return absl::OkStatus();
  };
  if (repeat % 2 == 0) {
    RETURN_IF_ERROR(cairn());
    RETURN_IF_ERROR(raw());
  } else {
    RETURN_IF_ERROR(raw());
    RETURN_IF_ERROR(cairn());
  }

  Stopwatch watch;
  size_t offset = 0;
  for (const std::string& v : m.encoded) {
    std::memcpy(buffer->data() + offset, v.data(), v.size());
    offset += v.size();
  }
  t->copy.push_back(watch.Elapsed());

  std::vector<std::string> encoded;
  encoded.reserve(m.partitions.size());
  watch = Stopwatch();
  for (const PartitionData& p : m.partitions) encoded.push_back(checkpoint::EncodeRows(p.rows));
  t->encode.push_back(watch.Elapsed());
  encoded.clear();

  uint64_t sum = 0;
  watch = Stopwatch();
  for (const std::string& v : m.encoded) sum += checkpoint::Checksum(v);
  t->checksum.push_back(watch.Elapsed());

  std::vector<PartitionRows> decoded;
  decoded.reserve(m.partitions.size());
  watch = Stopwatch();
  for (const std::string& v : m.encoded) {
    ASSIGN_OR_RETURN(PartitionRows rows, checkpoint::DecodeRows(v, "benchmark partition"));
    decoded.push_back(std::move(rows));
  }
  t->decode.push_back(watch.Elapsed());
  // Keep the results observable so no pass can be optimized away.
  if (sum == 0 && decoded.empty()) return absl::InternalError("nothing was checksummed");
  return absl::OkStatus();
}

std::string Format(const char* format, double value) {
  char out[32];
  std::snprintf(out, sizeof(out), format, value);
  return out;
}

// Cairn's MB/s over the reference's: the reference's seconds over Cairn's.
std::string Ratio(double cairn_s, double reference_s) {
  return Format("%.2f", reference_s / cairn_s);
}

void Row(const char* operation, const char* what, const std::vector<Sample>& samples,
         double bytes, const std::string& ratio) {
  const Sample median = Median(samples);
  std::vector<long> faults;
  for (const Sample& s : samples) faults.push_back(s.minor_faults);
  std::sort(faults.begin(), faults.end());
  std::printf("| %s | %s | %.3f | %.0f | %.3f | %ld | %s |\n", operation, what, median.wall_s,
              bytes / median.wall_s / 1e6, median.cpu_s, faults[faults.size() / 2],
              ratio.c_str());
}

void PrintTables(const Timings& t, double bytes) {
  const Sample cw = Median(t.cairn_write), cr = Median(t.cairn_read);
  const Sample rwf = Median(t.raw_write_flush), rwh = Median(t.raw_write_whole);
  const Sample rw = Median(t.raw_write), rr = Median(t.raw_read);
  std::printf("| operation | what is timed | median s | MB/s | CPU s | faults | Cairn/raw |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|\n");
  Row("write", "Cairn: CheckpointWriter::Open + Write", t.cairn_write, bytes,
      Ratio(cw.wall_s, rwf.wall_s));
  Row("write", "raw RocksDB: Open + WriteBatch of the values (sync) + Flush", t.raw_write_flush,
      bytes, "");
  Row("write", "raw RocksDB: the same + Cairn's manifest and worker values", t.raw_write_whole,
      bytes, "");
  Row("write", "raw RocksDB: Open + WriteBatch of the values (sync), no Flush", t.raw_write,
      bytes, "");
  Row("read", "Cairn: CheckpointReader::Open + Latest + ReadPartition x64", t.cairn_read, bytes,
      Ratio(cr.wall_s, rr.wall_s));
  Row("read", "raw RocksDB: OpenForReadOnly + Get x64", t.raw_read, bytes, "");
  Row("floor", "memcpy of the encoded values", t.copy, bytes, "");
  std::printf("\nCairn/raw = Cairn's MB/s over raw RocksDB's (values only, with Flush, as the "
              "writer does).\nWrite against the raw batch with Cairn's manifest and worker "
              "values: %s; against raw without Flush: %s. CPU seconds, Cairn over raw: write %s "
              "(%s against the batch with manifest), read %s\n\n",
              Ratio(cw.wall_s, rwh.wall_s).c_str(), Ratio(cw.wall_s, rw.wall_s).c_str(),
              Format("%.2f", cw.cpu_s / rwf.cpu_s).c_str(),
              Format("%.2f", cw.cpu_s / rwh.cpu_s).c_str(),
              Format("%.2f", cr.cpu_s / rr.cpu_s).c_str());

  const Sample enc = Median(t.encode), sum = Median(t.checksum), dec = Median(t.decode);
  std::printf("| part of Cairn's work | median s | MB/s | of Cairn's write / read s |\n");
  std::printf("|---|---:|---:|---:|\n");
  const auto share = [](double part, double whole) {
    return Format("%.0f%%", 100 * part / whole);
  };
  std::printf("| EncodeRows x64 (write) | %.3f | %.0f | %s |\n", enc.wall_s,
              bytes / enc.wall_s / 1e6, share(enc.wall_s, cw.wall_s).c_str());
  std::printf("| XXH64 x64 (write, and again on read) | %.3f | %.0f | %s / %s |\n", sum.wall_s,
              bytes / sum.wall_s / 1e6, share(sum.wall_s, cw.wall_s).c_str(),
              share(sum.wall_s, cr.wall_s).c_str());
  std::printf("| DecodeRows x64 (read) | %.3f | %.0f | %s |\n", dec.wall_s,
              bytes / dec.wall_s / 1e6, share(dec.wall_s, cr.wall_s).c_str());
}

int Run(size_t mib, const std::string& optimizer, int repeats, const std::string& tmpdir,
        bool verbose) {
  // As in cairn-server, whose checkpoints this measures.
  TuneAllocator();
  DisableMutexDeadlockDetection();
  absl::StatusOr<Model> made = MakeModel(mib, optimizer);
  if (!made.ok()) {
    std::fprintf(stderr, "model: %s\n", made.status().ToString().c_str());
    return 1;
  }
  const Model& m = *made;
  absl::StatusOr<ScratchDir> root = ScratchDir::Create(tmpdir);
  if (!root.ok()) {
    std::fprintf(stderr, "%s\n", root.status().ToString().c_str());
    return 1;
  }
  const double bytes = static_cast<double>(m.encoded_bytes);
  size_t min_chunks = m.partitions[0].rows.keys.size(), max_chunks = min_chunks;
  for (const PartitionData& p : m.partitions) {
    min_chunks = std::min(min_chunks, p.rows.keys.size());
    max_chunks = std::max(max_chunks, p.rows.keys.size());
  }
  std::printf("model: dense table %s [%lld x %lld] float32, %s (%d slots per element): "
              "%.1f MiB of values and slots\n",
              m.spec.name().c_str(), static_cast<long long>(m.spec.shape(0)),
              static_cast<long long>(m.spec.shape(1)), optimizer.c_str(), m.slots_per_element,
              static_cast<double>(m.value_bytes) / (1 << 20));
  std::printf("partitions: %u of %zu-%zu chunks x %lld floats; %.0f encoded bytes in %zu values\n",
              kPartitions, min_chunks, max_chunks, static_cast<long long>(m.spec.chunk_size()),
              bytes, m.encoded.size());
  std::printf("stores under %s (removed at the end); %d repeats, medians; MB = 1e6 bytes of "
              "encoded values\n\n",
              tmpdir.c_str(), repeats);

  // A touched destination, so memcpy times the copy, not page faults.
  std::string buffer(m.encoded_bytes, '\0');
  Timings t;
  for (int r = 0; r < repeats; ++r) {
    if (absl::Status s = RunOnce(m, root->path(), r, &buffer, &t); !s.ok()) {
      std::fprintf(stderr, "repeat %d: %s\n", r + 1, s.ToString().c_str());
      return 1;
    }
    if (verbose) {
      std::printf("repeat %d (wall s / CPU s / minor faults):", r + 1);
      const std::pair<const char*, const std::vector<Sample>*> ops[] = {
          {"Cairn write", &t.cairn_write},
          {"Cairn read", &t.cairn_read},
          {"raw write+Flush", &t.raw_write_flush},
          {"raw+manifest write+Flush", &t.raw_write_whole},
          {"raw write", &t.raw_write},
          {"raw read", &t.raw_read},
          {"memcpy", &t.copy}};
      for (const auto& [name, samples] : ops) {
        const Sample& last = samples->back();
        std::printf(" %s %.3f/%.3f/%ld;", name, last.wall_s, last.cpu_s, last.minor_faults);
      }
      std::printf("\n");
    }
  }
  if (verbose) std::printf("\n");
  PrintTables(t, bytes);
  return 0;
}

}  // namespace
}  // namespace cairn

int main(int argc, char** argv) {
  CLI::App app{"Cairn checkpoint write and restore next to raw RocksDB and memcpy."};
  size_t mib = 256;
  int repeats = 3;
  std::string optimizer = "sgd";
  const char* env_tmp = std::getenv("TMPDIR");
  std::string tmpdir = env_tmp != nullptr && env_tmp[0] != '\0' ? env_tmp : "/tmp";
  app.add_option("--model-mib", mib, "float32 values of the dense table, in MiB")
      ->check(CLI::Range(1, 4096));
  app.add_option("--optimizer", optimizer,
                 "sgd: no optimizer slots; adam: two slots per element (3x the bytes)")
      ->check(CLI::IsMember({"sgd", "adam"}));
  app.add_option("--repeats", repeats, "timed runs of each measurement")
      ->check(CLI::Range(1, 100));
  app.add_option("--tmpdir", tmpdir, "where the stores are made (default $TMPDIR, else /tmp)");
  bool verbose = false;
  app.add_flag("--verbose", verbose, "also print every repeat's wall and CPU seconds");
  CLI11_PARSE(app, argc, argv);
  return cairn::Run(mib, optimizer, repeats, tmpdir, verbose);
}
