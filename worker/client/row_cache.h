// The worker-side parameter cache of the client library, after the SSP
// process cache of Petuum (Ho et al., "More Effective Distributed ML via a
// Stale Synchronous Parallel Parameter Server", NIPS 2013, section 3).
//
// An entry is one key of one table (a dense chunk or a sparse embedding row)
// with the values a server returned and two tags:
//   min_clock   the server's minimum worker clock when it served the pull
//               (PullResponse.min_clock): every update of iterations
//               < min_clock is in the values (docs/design.md, Consistency);
//   fetch_clock the reading worker's clock when it pulled (kept for
//               diagnostics and to prefer the later of two equal reads).
// A pull at iteration t may use an entry when it is fresh enough for the
// table's consistency (see Freshness below):
//   SSP, bound s:  min_clock >= t - s   (the same rule the server waits on)
//   BSP (s = 0):   min_clock >= t       (a worker at iteration t never sees a
//                  server min clock above t, so this hits only for a second
//                  pull within the same iteration: nothing could have changed)
//   ASP:           never: ASP reads always go to the servers. ASP sets no
//                  bound, so any cached value would be allowed, but there is
//                  no wait to save and a cached value would only make reads
//                  staler than the servers', so ASP tables are not cached.
// Read-my-writes (field case B15): a push invalidates the pushed keys, when
// it is sent and again when it is acknowledged, so the worker's next pull
// after a push goes to the server, which has applied it (SSP/ASP) or will
// show it once the iteration closes (BSP). A dense table pushed every
// iteration therefore always misses: the cache pays off for keys read more
// often than written (sparse rows read by many iterations, tables that only
// some workers push, repeated reads within an iteration).
//
// Memory is bounded by `capacity_bytes` (values plus a fixed per-entry
// overhead); the least recently used entries go first. A pull that started
// before an invalidation of its table does not insert (its values may predate
// the push).
//
// Thread-safe.
#ifndef CAIRN_WORKER_CLIENT_ROW_CACHE_H_
#define CAIRN_WORKER_CLIENT_ROW_CACHE_H_

#include <cstdint>
#include <list>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "cairn/v1/types.pb.h"
#include "common/bytes.h"

namespace cairn {

// What an entry must satisfy to serve a pull (see the header comment).
struct Freshness {
  int64_t min_clock = 0;    // entry.min_clock >= this
  int64_t fetch_clock = 0;  // entry.fetch_clock >= this

  // The rule for `spec`'s consistency at iteration `clock`. Only for tables
  // that Cacheable() accepts.
  static Freshness For(const v1::TableSpec& spec, int64_t clock);
};

// Whether `spec`'s values are kept in the cache at all (not for ASP).
bool Cacheable(const v1::TableSpec& spec);

class RowCache {
 public:
  // Bytes an entry costs beyond its values (map node, list node, tags).
  static constexpr uint64_t kEntryOverheadBytes = 96;

  // capacity_bytes: 0 disables the cache (every lookup misses, nothing is kept).
  explicit RowCache(uint64_t capacity_bytes);

  RowCache(const RowCache&) = delete;
  RowCache& operator=(const RowCache&) = delete;

  bool enabled() const { return capacity_bytes_ > 0; }

  // For each keys[i]: when a fresh entry of `floats_per_key[i]` floats exists,
  // copies it to `out[i]`, sets hit[i] = true and lowers *oldest_min_clock to
  // its min_clock; else hit[i] = false. keys, out and hit have equal lengths;
  // out[i] points at floats_per_key(i) writable floats.
  // Returns the number of hits.
  size_t Lookup(uint32_t table, absl::Span<const Key> keys, const Freshness& need,
                absl::Span<float* const> out, absl::Span<const uint32_t> floats_per_key,
                std::vector<bool>* hit, int64_t* oldest_min_clock) ABSL_LOCKS_EXCLUDED(mu_);

  // The table's invalidation count; a pull reads it before it is sent and
  // passes it to Insert.
  uint64_t Generation(uint32_t table) const ABSL_LOCKS_EXCLUDED(mu_);

  // Stores `values` for (table, key) with its tags, replacing an older entry,
  // unless the table was invalidated since `generation` was read or the entry
  // alone exceeds the capacity. Evicts least recently used entries to fit
  // and returns how many it evicted.
  size_t Insert(uint32_t table, Key key, absl::Span<const float> values, int64_t min_clock,
              int64_t fetch_clock, uint64_t generation) ABSL_LOCKS_EXCLUDED(mu_);

  // Drops the entries of `keys` and bumps the table's generation.
  void Invalidate(uint32_t table, absl::Span<const Key> keys) ABSL_LOCKS_EXCLUDED(mu_);

  // Entries held / bytes charged / entries evicted so far.
  size_t num_entries() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t bytes() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t evictions() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using EntryKey = std::pair<uint32_t, Key>;  // (table, key)
  struct Entry {
    std::vector<float> values;
    int64_t min_clock = 0;
    int64_t fetch_clock = 0;
    std::list<EntryKey>::iterator lru;  // position in lru_
  };

  static uint64_t Cost(size_t floats) { return floats * sizeof(float) + kEntryOverheadBytes; }
  void EraseLocked(absl::flat_hash_map<EntryKey, Entry>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t capacity_bytes_;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<EntryKey, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::list<EntryKey> lru_ ABSL_GUARDED_BY(mu_);  // front: most recently used
  absl::flat_hash_map<uint32_t, uint64_t> generation_ ABSL_GUARDED_BY(mu_);
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t evictions_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace cairn

#endif  // CAIRN_WORKER_CLIENT_ROW_CACHE_H_
