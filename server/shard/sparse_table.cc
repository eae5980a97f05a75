#include "server/shard/sparse_table.h"

#include <malloc.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/initializer.h"
#include "common/log.h"
#include "common/partitioning.h"
#include "common/status_macros.h"
#include "server/shard/piece_rows.h"

namespace cairn {
namespace {

// How far ahead a loop over rows prefetches: a row's lookup and its values
// each miss the cache at random places in a large table; this many rows of
// work ahead hide most of that wait (a flat_hash_map probe and an optimizer
// step on a narrow row take tens of nanoseconds, a miss to memory about a
// hundred).
constexpr size_t kPrefetchAhead = 8;

}  // namespace

SparseTable::SparseTable(const v1::TableSpec& spec, uint32_t num_partitions,
                         const std::vector<bool>& owned, std::unique_ptr<Optimizer> optimizer,
                         ColdRowStore* cold)
    : Table(spec, num_partitions, std::move(optimizer)),
      width_(static_cast<uint32_t>(spec.width())),
      slots_per_element_(optimizer_->SlotsPerElement()),
      min_count_(std::max<uint32_t>(spec.min_count(), 1)),
      eviction_(spec.capacity_rows(), spec.evict_to() > 0 ? spec.evict_to() : 0.9,
                spec.eviction()),
      ttl_clocks_(static_cast<int64_t>(spec.ttl_clocks())),
      tracks_slots_(eviction_.enabled() || spec.ttl_clocks() > 0),
      owned_(owned.size()),
      cold_(cold) {
  for (size_t p = 0; p < owned.size(); ++p) owned_[p].store(owned[p], std::memory_order_relaxed);
  owns_all_.store(std::find(owned.begin(), owned.end(), false) == owned.end(),
                  std::memory_order_relaxed);
  ReserveForCapacity();
}

void SparseTable::ReserveForCapacity() {
  // A table at capacity takes a push's new rows before the pass that evicts
  // down to evict_to: reserved up front, its arrays do not double past the
  // capacity (to twice its rows, most never used again: field case C11)
  // nor copy themselves while the table grows. Pages are touched only as
  // rows are made. Above 1 GiB the arrays grow as they go, so a generous
  // capacity never asks the system for memory the host lacks.
  if (!eviction_.enabled()) return;
  const uint64_t rows = spec_.capacity_rows() + spec_.capacity_rows() / 4;
  const uint64_t row_bytes =
      static_cast<uint64_t>(width_) * (1 + slots_per_element_) * sizeof(float) +
      sizeof(int64_t) + sizeof(Key) + sizeof(uint64_t);
  if (rows * row_bytes > (uint64_t{1} << 30)) return;
  absl::MutexLock lock(&mu_);
  values_.reserve(rows * width_);
  slots_.reserve(rows * width_ * slots_per_element_);
  steps_.reserve(rows);
  slot_keys_.reserve(rows);
  last_update_.reserve(rows);
  if (ttl_clocks_ > 0) last_clock_.reserve(rows);
}

void SparseTable::AddPartition(uint32_t partition) {
  if (partition >= owned_.size()) return;
  owned_[partition].store(true, std::memory_order_release);
  for (const std::atomic<bool>& p : owned_) {
    if (!p.load(std::memory_order_acquire)) return;
  }
  owns_all_.store(true, std::memory_order_release);
}

absl::StatusOr<uint64_t> SparseTable::CheckKeys(const std::string& keys, size_t n) const {
  // A server that holds every partition holds every key: none is hashed.
  if (owns_all_.load(std::memory_order_acquire)) return static_cast<uint64_t>(n) * width_;
  for (size_t i = 0; i < n; ++i) {
    const Key k = KeyAt(keys, i);
    const uint32_t p = SparsePartition(k, num_partitions_);
    if (!owned_[p].load(std::memory_order_acquire)) {
      return absl::FailedPreconditionError(
          absl::StrCat("table ", spec_.name(), ": key ", k, " is in partition ", p,
                       ", which this server does not hold"));
    }
  }
  return static_cast<uint64_t>(n) * width_;
}

void SparseTable::Read(const std::string& keys, size_t n, std::string* out) const {
  const size_t start = out->size();
  out->resize(start + n * width_ * sizeof(float));
  ReadTo(keys, n, reinterpret_cast<float*>(out->data() + start));
}

void SparseTable::ReadTo(const std::string& keys, size_t n, float* out) const {
  const bool cold = cold_ != nullptr && cold_rows_.load(std::memory_order_relaxed) > 0;
  std::vector<size_t> missed;  // with a cold tier: rows not in memory, read in one batch
  constexpr uint32_t kAbsent = ~uint32_t{0};
  std::vector<uint32_t> slot_of(n);
  absl::ReaderMutexLock lock(&mu_);
  // The slots first, with the lookups of keys ahead prefetched; then the
  // rows, with rows ahead prefetched.
  for (size_t i = 0; i < std::min(n, kPrefetchAhead); ++i) index_.prefetch(KeyAt(keys, i));
  for (size_t i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n) index_.prefetch(KeyAt(keys, i + kPrefetchAhead));
    auto it = index_.find(KeyAt(keys, i));
    slot_of[i] = it == index_.end() ? kAbsent : it->second;
  }
  for (size_t i = 0; i < std::min(n, kPrefetchAhead); ++i) {
    if (slot_of[i] != kAbsent) PrefetchRowLocked(slot_of[i], /*update=*/false);
  }
  for (size_t i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n && slot_of[i + kPrefetchAhead] != kAbsent) {
      PrefetchRowLocked(slot_of[i + kPrefetchAhead], /*update=*/false);
    }
    float* row = out + i * width_;
    if (slot_of[i] != kAbsent) {
      std::memcpy(row, values_.data() + static_cast<uint64_t>(slot_of[i]) * width_,
                  width_ * sizeof(float));
    } else if (cold) {
      missed.push_back(i);
    } else {
      InitSparseRow(spec_, KeyAt(keys, i), absl::MakeSpan(row, width_));
    }
  }
  if (missed.empty()) return;
  std::vector<Key> cold_keys(missed.size());
  for (size_t j = 0; j < missed.size(); ++j) cold_keys[j] = KeyAt(keys, missed[j]);
  std::vector<float> cold_values(missed.size() * width_);
  std::vector<bool> found;
  const absl::Status read =
      cold_->ReadValues(spec_.id(), cold_keys, width_,
                        static_cast<size_t>(width_) * slots_per_element_,
                        absl::MakeSpan(cold_values), &found);
  if (!read.ok()) LOG_ERROR("pull of {}: {}", spec_.name(), read.message());
  for (size_t j = 0; j < missed.size(); ++j) {
    float* row = out + missed[j] * width_;
    if (read.ok() && found[j]) {
      std::memcpy(row, cold_values.data() + j * width_, width_ * sizeof(float));
    } else {
      InitSparseRow(spec_, cold_keys[j], absl::MakeSpan(row, width_));
    }
  }
}

template <typename GradAt>
void SparseTable::GatherRows(const std::string& keys, size_t n, GradAt grad_at,
                             GradBuffer* buffer) const {
  buffer->Reserve(n, n * width_);
  for (size_t i = 0; i < n; ++i) buffer->Add(KeyAt(keys, i), grad_at(i), width_);
}

void SparseTable::Gather(const std::string& keys, size_t n, absl::string_view values,
                         GradBuffer* buffer) const {
  const float* v = reinterpret_cast<const float*>(values.data());
  GatherRows(keys, n, [&](size_t i) { return v + i * width_; }, buffer);
}

void SparseTable::Gather(const std::string& keys, size_t n, PieceRows* rows,
                         GradBuffer* buffer) const {
  GatherRows(keys, n, [rows](size_t i) { return rows->Row(i); }, buffer);
}

uint32_t SparseTable::FindOrCreate(Key key) {
  auto [it, inserted] = index_.try_emplace(key, static_cast<uint32_t>(steps_.size()));
  if (inserted) {
    const size_t base = values_.size();
    values_.resize(base + width_);
    InitSparseRow(spec_, key, absl::MakeSpan(values_.data() + base, width_));
    const size_t slot_base = slots_.size();
    slots_.resize(slot_base + static_cast<size_t>(width_) * slots_per_element_);
    optimizer_->InitSlots(slots_.data() + slot_base, width_);
    steps_.push_back(0);
    admitted_.fetch_add(1, std::memory_order_relaxed);
    TrackNewSlotLocked(key);
  }
  return it->second;
}

bool SparseTable::TakeFromColdLocked(Key key) {
  if (cold_ == nullptr || cold_rows_.load(std::memory_order_relaxed) == 0) return false;
  const size_t slot_floats = static_cast<size_t>(width_) * slots_per_element_;
  const size_t base = values_.size();
  const size_t slot_base = slots_.size();
  values_.resize(base + width_);
  slots_.resize(slot_base + slot_floats);
  int64_t step = 0;
  absl::StatusOr<bool> found =
      cold_->Get(spec_.id(), key, /*remove=*/true, &step,
                 absl::MakeSpan(values_.data() + base, width_),
                 absl::MakeSpan(slots_.data() + slot_base, slot_floats));
  if (!found.ok() || !*found) {
    if (!found.ok()) LOG_ERROR("table {}: {}", spec_.name(), found.status().message());
    values_.resize(base);
    slots_.resize(slot_base);
    return false;
  }
  cold_rows_.fetch_sub(1, std::memory_order_relaxed);
  index_.emplace(key, static_cast<uint32_t>(steps_.size()));
  steps_.push_back(step);
  TrackNewSlotLocked(key);
  return true;
}

void SparseTable::EvictIfOverLocked() {
  if (!eviction_.Over(index_.size())) return;
  const std::vector<uint32_t> victims = eviction_.Victims(last_update_, steps_, slot_keys_);
  const size_t slot_floats = static_cast<size_t>(width_) * slots_per_element_;
  if (cold_ != nullptr) {  // the victims to the cold tier, in one write
    std::vector<ColdRowStore::Row> rows;
    rows.reserve(victims.size());
    for (uint32_t slot : victims) {
      rows.push_back(
          {slot_keys_[slot], steps_[slot],
           absl::MakeConstSpan(values_.data() + static_cast<size_t>(slot) * width_, width_),
           absl::MakeConstSpan(slots_.data() + slot * slot_floats, slot_floats)});
    }
    const absl::Status put = cold_->Put(spec_.id(), rows);
    if (put.ok()) {
      cold_rows_.fetch_add(rows.size(), std::memory_order_relaxed);
      spilled_.fetch_add(rows.size(), std::memory_order_relaxed);
    } else {
      LOG_ERROR("table {}: {} evicted rows dropped, not kept: {}", spec_.name(), rows.size(),
                put.message());
    }
  }
  RemoveSlotsLocked(victims);
  evicted_.fetch_add(victims.size(), std::memory_order_relaxed);
}

void SparseTable::TrackNewSlotLocked(Key key) {
  if (!tracks_slots_) return;
  slot_keys_.push_back(key);
  last_update_.push_back(0);
  if (ttl_clocks_ > 0) last_clock_.push_back(clock_);
}

void SparseTable::RemoveSlotsLocked(const std::vector<uint32_t>& slots) {
  const size_t slot_floats = static_cast<size_t>(width_) * slots_per_element_;
  for (uint32_t slot : slots) {  // descending: every slot above is kept
    index_.erase(slot_keys_[slot]);
    const uint32_t last = static_cast<uint32_t>(steps_.size() - 1);
    if (slot != last) {
      std::memcpy(values_.data() + static_cast<size_t>(slot) * width_,
                  values_.data() + static_cast<size_t>(last) * width_, width_ * sizeof(float));
      std::memcpy(slots_.data() + slot * slot_floats, slots_.data() + last * slot_floats,
                  slot_floats * sizeof(float));
      steps_[slot] = steps_[last];
      slot_keys_[slot] = slot_keys_[last];
      last_update_[slot] = last_update_[last];
      if (ttl_clocks_ > 0) last_clock_[slot] = last_clock_[last];
      index_[slot_keys_[slot]] = slot;
    }
    values_.resize(values_.size() - width_);
    slots_.resize(slots_.size() - slot_floats);
    steps_.pop_back();
    slot_keys_.pop_back();
    last_update_.pop_back();
    if (ttl_clocks_ > 0) last_clock_.pop_back();
  }
  // Memory back to the system (field case C11): the arrays shrink when they
  // hold far more than the rows left.
  if (values_.capacity() > 2 * values_.size() + 4096) {
    values_.shrink_to_fit();
    slots_.shrink_to_fit();
    steps_.shrink_to_fit();
    slot_keys_.shrink_to_fit();
    last_update_.shrink_to_fit();
    last_clock_.shrink_to_fit();
    malloc_trim(0);
  }
}

void SparseTable::DropPendingIfOverLocked() {
  if (!eviction_.Over(pending_.size())) return;
  std::vector<Key> keys;
  std::vector<uint32_t> counts;
  keys.reserve(pending_.size());
  counts.reserve(pending_.size());
  for (const auto& [key, count] : pending_) {
    keys.push_back(key);
    counts.push_back(count);
  }
  const std::vector<Key> victims = eviction_.PendingVictims(keys, counts);
  for (Key k : victims) pending_.erase(k);
  dropped_pending_.fetch_add(victims.size(), std::memory_order_relaxed);
  // The map's buckets back to the allocator once it is far emptier.
  if (pending_.capacity() > 4 * pending_.size() + 1024) pending_.rehash(0);
}

void SparseTable::PrefetchRowLocked(uint32_t slot, bool update) const {
  const uint64_t off = static_cast<uint64_t>(slot) * width_;
  const char* values = reinterpret_cast<const char*>(values_.data() + off);
  const uint64_t bytes = uint64_t{width_} * sizeof(float);
  // At most the first 4 cache lines of each array: the rest of a wide row
  // is sequential, which the hardware prefetcher follows by itself.
  for (uint64_t b = 0; b < std::min<uint64_t>(bytes, 256); b += 64) __builtin_prefetch(values + b);
  if (!update) return;
  if (slots_per_element_ > 0) {
    const char* slots = reinterpret_cast<const char*>(slots_.data() + off * slots_per_element_);
    const uint64_t slot_bytes = bytes * static_cast<uint64_t>(slots_per_element_);
    for (uint64_t b = 0; b < std::min<uint64_t>(slot_bytes, 256); b += 64) {
      __builtin_prefetch(slots + b);
    }
  }
  __builtin_prefetch(steps_.data() + slot);
}

template <typename KeyAt>
void SparseTable::FindOrCreateAllLocked(size_t n, KeyAt key_at) {
  push_slots_.resize(n);
  for (size_t i = 0; i < std::min(n, kPrefetchAhead); ++i) index_.prefetch(key_at(i));
  for (size_t i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n) index_.prefetch(key_at(i + kPrefetchAhead));
    push_slots_[i] = FindOrCreate(key_at(i));
  }
}

template <typename GradAt>
void SparseTable::UpdateAllLocked(size_t n, GradAt grad_at) {
  // Rows go to the optimizer kUpdateBatch at a time (one virtual call and
  // one dispatch to the CPU's loop for all of them), prefetched a batch
  // further ahead than one row at a time would: a batch's rows are all
  // asked for before the first is updated.
  constexpr size_t kAhead = kPrefetchAhead + kUpdateBatch;
  for (size_t i = 0; i < std::min(n, kAhead); ++i) {
    PrefetchRowLocked(push_slots_[i], /*update=*/true);
  }
  float* w[kUpdateBatch];
  float* slots[kUpdateBatch];
  const UnalignedFloat* g[kUpdateBatch];
  int64_t steps[kUpdateBatch];
  for (size_t first = 0; first < n; first += kUpdateBatch) {
    const size_t rows = std::min(kUpdateBatch, n - first);
    for (size_t j = 0; j < rows; ++j) {
      const size_t i = first + j;
      if (i + kAhead < n) PrefetchRowLocked(push_slots_[i + kAhead], /*update=*/true);
      const uint32_t slot = push_slots_[i];
      const uint64_t off = static_cast<uint64_t>(slot) * width_;
      w[j] = values_.data() + off;
      slots[j] = slots_.data() + off * slots_per_element_;
      g[j] = grad_at(i);
      steps[j] = ++steps_[slot];
      CountUpdateLocked(slot);
    }
    optimizer_->ApplyRows(w, slots, g, steps, rows, width_);
  }
}

template <typename KeyAt, typename GradAt>
void SparseTable::ApplyDistinctLocked(size_t n, KeyAt key_at, GradAt grad_at) {
  if (FirstPushDecides()) {
    for (size_t i = 0; i < n; ++i) ApplyRowLocked(key_at(i), grad_at(i));
    return;
  }
  FindOrCreateAllLocked(n, key_at);
  UpdateAllLocked(n, grad_at);
}

void SparseTable::ApplyRowLocked(Key key, const UnalignedFloat* grad) {
  // Only tables with a cold tier or admission look the key up first (a row
  // in the cold tier was admitted once: it comes back as it was).
  if (FirstPushDecides() && !index_.contains(key) &&
      !TakeFromColdLocked(key) && min_count_ > 1) {
    auto [it, inserted] = pending_.try_emplace(key, 0);
    if (++it->second < min_count_) {
      not_admitted_.fetch_add(1, std::memory_order_relaxed);
      if (inserted) DropPendingIfOverLocked();
      return;  // counted, not stored
    }
    pending_.erase(it);  // admitted: this push is the row's first update
  }
  UpdateSlotLocked(FindOrCreate(key), grad);
}

void SparseTable::UpdateSlotLocked(uint32_t slot, const UnalignedFloat* grad) {
  const uint64_t off = static_cast<uint64_t>(slot) * width_;
  optimizer_->Apply(values_.data() + off, slots_.data() + off * slots_per_element_, grad, width_,
                    ++steps_[slot]);
  CountUpdateLocked(slot);
}

void SparseTable::CountUpdateLocked(uint32_t slot) {
  if (tracks_slots_) last_update_[slot] = ++tick_;
  if (ttl_clocks_ > 0) last_clock_[slot] = clock_;
}

void SparseTable::Apply(const GradBuffer& grads) {
  absl::MutexLock lock(&mu_);
  const std::vector<GradBuffer::Row>& rows = grads.rows();
  // The rows' keys are distinct: a buffer sums per key.
  ApplyDistinctLocked(
      rows.size(), [&](size_t i) { return rows[i].key; },
      [&](size_t i) { return grads.RowData(rows[i]); });
  EvictIfOverLocked();
}

void SparseTable::ApplyUnique(const std::string& keys, size_t n, absl::string_view values) {
  const float* g = reinterpret_cast<const float*>(values.data());
  absl::MutexLock lock(&mu_);
  ApplyDistinctLocked(
      n, [&](size_t i) { return KeyAt(keys, i); }, [&](size_t i) { return g + i * width_; });
  EvictIfOverLocked();
}

void SparseTable::ApplyUnique(const std::string& keys, size_t n, PieceRows* rows) {
  absl::MutexLock lock(&mu_);
  ApplyDistinctLocked(
      n, [&](size_t i) { return KeyAt(keys, i); }, [rows](size_t i) { return rows->Row(i); });
  EvictIfOverLocked();
}

bool SparseTable::ApplyIfDistinct(const std::string& keys, size_t n, absl::string_view values) {
  const float* g = reinterpret_cast<const float*>(values.data());
  return ApplyIfDistinctRows(keys, n, [&](size_t i) { return g + i * width_; });
}

bool SparseTable::ApplyIfDistinct(const std::string& keys, size_t n, PieceRows* rows) {
  return ApplyIfDistinctRows(keys, n, [rows](size_t i) { return rows->Row(i); });
}

template <typename GradAt>
bool SparseTable::ApplyIfDistinctRows(const std::string& keys, size_t n, GradAt grad_at) {
  if (FirstPushDecides()) return false;  // a row's first push decides
  absl::MutexLock lock(&mu_);
  if (++stamp_ == 0) {  // wrapped: no slot may carry a stamp from before
    std::fill(touched_.begin(), touched_.end(), 0);
    stamp_ = 1;
  }
  // A row created here for a push that then goes the gathering way is the
  // row that way creates: its first update is the same.
  FindOrCreateAllLocked(n, [&](size_t i) { return KeyAt(keys, i); });
  if (touched_.size() < steps_.size()) touched_.resize(steps_.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t slot = push_slots_[i];
    if (touched_[slot] == stamp_) return false;  // a repeat: to be summed first
    touched_[slot] = stamp_;
  }
  UpdateAllLocked(n, grad_at);
  EvictIfOverLocked();
  return true;
}

void SparseTable::AdvanceClock(int64_t clock) {
  if (ttl_clocks_ <= 0) return;
  absl::MutexLock lock(&mu_);
  if (clock_ == kNoClock) {
    // The first clock this table sees: what it holds (rows of iterations
    // closing now, restored or transferred rows) counts as updated just
    // before it.
    for (int64_t& c : last_clock_) {
      if (c == kNoClock) c = clock - 1;
    }
    next_scan_ = clock;
  } else if (clock <= clock_) {
    return;
  }
  clock_ = clock;
  if (clock < next_scan_) return;
  next_scan_ = clock + std::max<int64_t>(1, ttl_clocks_ / 8);
  std::vector<uint32_t> expired;
  for (size_t slot = last_clock_.size(); slot-- > 0;) {  // descending
    if (clock - last_clock_[slot] > ttl_clocks_) expired.push_back(static_cast<uint32_t>(slot));
  }
  if (expired.empty()) return;
  RemoveSlotsLocked(expired);
  expired_.fetch_add(expired.size(), std::memory_order_relaxed);
}

uint64_t SparseTable::NumKeys() const {
  absl::ReaderMutexLock lock(&mu_);
  return index_.size();
}

uint64_t SparseTable::NumPending() const {
  absl::ReaderMutexLock lock(&mu_);
  return pending_.size();
}

Table::KeyCount SparseTable::CountKeys(const std::vector<bool>& in) const {
  KeyCount count;
  absl::ReaderMutexLock lock(&mu_);
  for (const auto& [key, slot] : index_) {
    const uint32_t p = SparsePartition(key, num_partitions_);
    if (p < in.size() && in[p]) ++count.keys;
  }
  count.value_bytes = count.keys * width_ * sizeof(float);
  return count;
}

uint64_t SparseTable::NumValueBytes() const {
  absl::ReaderMutexLock lock(&mu_);
  return values_.size() * sizeof(float);
}

}  // namespace cairn

namespace cairn {

absl::StatusOr<PartitionRows> SparseTable::ExportPartition(uint32_t partition) const {
  if (partition >= num_partitions_ || !owned_[partition].load(std::memory_order_acquire)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "table ", spec_.name(), ": partition ", partition, " is not held by this server"));
  }
  PartitionRows rows;
  rows.slots_per_element = slots_per_element_;
  absl::ReaderMutexLock lock(&mu_);
  std::vector<std::pair<Key, uint32_t>> held;
  for (const auto& [key, slot] : index_) {
    if (SparsePartition(key, num_partitions_) == partition) held.emplace_back(key, slot);
  }
  std::sort(held.begin(), held.end());
  const size_t slot_floats = static_cast<size_t>(width_) * slots_per_element_;
  // Both tiers, merged in key order (a key is in one of them).
  size_t next = 0;
  auto add_held_below = [&](Key bound, bool all) {
    mu_.AssertReaderHeld();  // held by the caller; clang cannot see it in a lambda
    for (; next < held.size() && (all || held[next].first < bound); ++next) {
      const auto& [key, slot] = held[next];
      rows.keys.push_back(key);
      rows.lengths.push_back(width_);
      rows.steps.push_back(steps_[slot]);
      const float* v = values_.data() + static_cast<size_t>(slot) * width_;
      rows.values.insert(rows.values.end(), v, v + width_);
      const float* s = slots_.data() + static_cast<size_t>(slot) * slot_floats;
      rows.slots.insert(rows.slots.end(), s, s + slot_floats);
    }
  };
  if (cold_ != nullptr && cold_rows_.load(std::memory_order_relaxed) > 0) {
    RETURN_IF_ERROR(cold_->ForEach(
        spec_.id(), width_, slot_floats,
        [&](Key key, int64_t step, absl::Span<const float> values,
            absl::Span<const float> slots) {
          if (SparsePartition(key, num_partitions_) != partition) return absl::OkStatus();
          add_held_below(key, /*all=*/false);
          rows.keys.push_back(key);
          rows.lengths.push_back(width_);
          rows.steps.push_back(step);
          rows.values.insert(rows.values.end(), values.begin(), values.end());
          rows.slots.insert(rows.slots.end(), slots.begin(), slots.end());
          return absl::OkStatus();
        }));
  }
  add_held_below(0, /*all=*/true);
  std::vector<std::pair<Key, uint32_t>> pending;
  for (const auto& [key, count] : pending_) {
    if (SparsePartition(key, num_partitions_) == partition) pending.emplace_back(key, count);
  }
  std::sort(pending.begin(), pending.end());
  for (const auto& [key, count] : pending) {
    rows.pending_keys.push_back(key);
    rows.pending_counts.push_back(count);
  }
  return rows;
}

absl::Status SparseTable::ImportPartition(uint32_t partition, const PartitionRows& rows) {
  if (partition >= num_partitions_ || !owned_[partition].load(std::memory_order_acquire)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "table ", spec_.name(), ": partition ", partition, " is not held by this server"));
  }
  RETURN_IF_ERROR(CheckRowsShape(spec_.name(), rows, slots_per_element_));
  for (size_t i = 0; i < rows.keys.size(); ++i) {
    const Key k = rows.keys[i];
    if (rows.lengths[i] != width_) {
      return absl::InvalidArgumentError(absl::StrCat("table ", spec_.name(), ": key ", k,
                                                     " has ", rows.lengths[i],
                                                     " floats, the table's width is ", width_));
    }
    if (SparsePartition(k, num_partitions_) != partition) {
      return absl::InvalidArgumentError(
          absl::StrCat("table ", spec_.name(), ": key ", k, " belongs to partition ",
                       SparsePartition(k, num_partitions_), ", not ", partition));
    }
    if (i > 0 && rows.keys[i - 1] >= k) {
      return absl::InvalidArgumentError(absl::StrCat(
          "table ", spec_.name(), ": keys not ascending at key ", k));
    }
  }
  if (rows.pending_keys.size() != rows.pending_counts.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table ", spec_.name(), ": ", rows.pending_keys.size(), " ids waiting for admission but ",
        rows.pending_counts.size(), " counts"));
  }
  for (Key k : rows.pending_keys) {
    if (SparsePartition(k, num_partitions_) != partition) {
      return absl::InvalidArgumentError(
          absl::StrCat("table ", spec_.name(), ": id ", k, " waiting for admission belongs to "
                       "partition ", SparsePartition(k, num_partitions_), ", not ", partition));
    }
  }
  absl::MutexLock lock(&mu_);
  for (const auto& entry : index_) {
    if (SparsePartition(entry.first, num_partitions_) == partition) {
      return absl::FailedPreconditionError(absl::StrCat(
          "table ", spec_.name(), ": partition ", partition,
          " already holds rows (key ", entry.first, "); restore needs an empty partition"));
    }
  }
  if (cold_ != nullptr && cold_rows_.load(std::memory_order_relaxed) > 0) {
    // Rows this server kept of the partition before are stale now.
    ASSIGN_OR_RETURN(const uint64_t dropped,
                     cold_->DeleteIf(spec_.id(), [&](Key k) {
                       return SparsePartition(k, num_partitions_) == partition;
                     }));
    cold_rows_.fetch_sub(std::min(dropped, cold_rows_.load()), std::memory_order_relaxed);
  }
  const size_t slot_floats = static_cast<size_t>(width_) * slots_per_element_;
  for (size_t i = 0; i < rows.keys.size(); ++i) {
    index_.emplace(rows.keys[i], static_cast<uint32_t>(steps_.size()));
    steps_.push_back(rows.steps[i]);
    values_.insert(values_.end(), rows.values.begin() + i * width_,
                   rows.values.begin() + (i + 1) * width_);
    slots_.insert(slots_.end(), rows.slots.begin() + i * slot_floats,
                  rows.slots.begin() + (i + 1) * slot_floats);
    TrackNewSlotLocked(rows.keys[i]);  // imported rows: older than any update here
  }
  for (size_t i = 0; i < rows.pending_keys.size(); ++i) {
    pending_[rows.pending_keys[i]] = rows.pending_counts[i];
  }
  DropPendingIfOverLocked();
  // With a cold tier, rows above the capacity go there now rather than at
  // the next push: a restored table larger than memory holds at most one
  // partition's rows beyond its capacity at once. (Without one, they stay
  // until the next push, whose rows are then the most recent and kept.)
  if (cold_ != nullptr) EvictIfOverLocked();
  return absl::OkStatus();
}

}  // namespace cairn
