// One table's gradients of one BSP iteration on a server, summed so that the
// result does not depend on the order the pushes arrive in (docs/design.md,
// "Applying updates"), on the primary and on every backup alike.
//
// Each row's sum is
//   (g0 + g1) + r0 + r1 + g2 + g3 + ...
// where gw is worker w's gradient for the row (what it pushed for it this
// iteration, summed in the order it sent it), except that for workers 0 and
// 1 g0 and g1 are their first gradient for the row and r0, r1 any later one
// (a worker that pushes the same row twice in one iteration). A missing
// term is left out, the first term present is taken as it is. Workers 0 and
// 1 come first because a + b and b + a are the same float: a dense table
// adds their first gradients straight into the iteration's sum as they
// arrive, whichever comes first, so a job of two workers holds one buffer
// of the table's size per iteration and copies each gradient once. Every
// other gradient waits in its worker's buffer and is added at Close, in
// worker-id order. A sparse table keeps every worker's gradients in that
// worker's buffer, so the rows of its sum come in worker-id order, not
// arrival order (a new row's slot, and an eviction's ties, stay the same on
// every replica): its rows are g0 + g1 + g2 + ..., gw being all of worker
// w's gradients for the row summed in the order it sent them. Both give the
// same bits when no worker sends a row twice in an iteration (a training
// step's push).
//
// Not thread-safe; the shard's lock guards it.
#ifndef CAIRN_SERVER_SHARD_BSP_TABLE_SUM_H_
#define CAIRN_SERVER_SHARD_BSP_TABLE_SUM_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"

#include "common/bytes.h"
#include "server/shard/grad_buffer.h"

namespace cairn {

class ForkJoin;

class BspTableSum {
 public:
  // Bits of FirstOf(): which of workers 0 and 1 have their first gradient
  // of a row in the running sum.
  static constexpr uint8_t kWorker0 = 1;
  static constexpr uint8_t kWorker1 = 2;

  // `fold_first_two`: add workers 0 and 1's first gradients into the sum as
  // they arrive (dense tables). `spare`: emptied buffers to take before
  // allocating (not owned; outlives this); `reserve_rows` / `reserve_floats`:
  // the room a new buffer gets (a dense table's rows and floats here, so a
  // buffer never regrows; 0 for none).
  BspTableSum(bool fold_first_two, std::vector<GradBuffer>* spare, size_t reserve_rows,
              size_t reserve_floats)
      : fold_(fold_first_two),
        spare_(spare),
        reserve_rows_(reserve_rows),
        reserve_floats_(reserve_floats) {}

  // Adds worker `worker`'s gradient for `key` (`length` floats).
  void Add(uint32_t worker, Key key, const float* grad, uint32_t length);
  // Add() for each of the `n` keys at `keys` (KeyAt), whose gradients lie
  // one after the other from `grads`, `length_of(key)` floats each. The
  // rows whose sum already holds the other of workers 0 and 1's first
  // gradient (the second of two workers to push a dense table) are added
  // after the others, in pieces on `helper` (fork_join.h; null: here) when
  // they come to ForkJoin::kMinSplitBytes: each row is its own sum, so the
  // bits are those of Add() in order.
  void AddRows(uint32_t worker, const std::string& keys, size_t n, const float* grads,
               absl::FunctionRef<uint32_t(Key)> length_of, ForkJoin* helper);
  // Adds every row of `rows` (one push's rows of worker `worker`, gathered);
  // takes the buffer itself, without a copy, where it can.
  void AddAll(uint32_t worker, GradBuffer&& rows);

  // Workers with a gradient in this iteration: the mean divides by them.
  int Contributors() const;

  // The rows to apply: every gradient summed as the header says, scaled by
  // 1 / Contributors() when `mean` and more than one worker pushed. Valid
  // until Recycle(). Empty when nobody pushed.
  const GradBuffer& Close(bool mean);
  // The same rows left unscaled (null when nobody pushed), with that scale
  // (1 when none) in `*scale`, for Table::ApplyScaled, which folds it into
  // the update or scales the rows in place first.
  GradBuffer* Close(bool mean, float* scale);
  // Gives the buffers back to `spare` (as many as were in use) for later
  // iterations; the object is empty after.
  void Recycle();

  // What a replica transfer carries, and how the receiver rebuilds it
  // (keys of other replica groups are left to the caller's filter):
  // the running sum's rows with FirstOf() of each, and each worker's waiting
  // rows.
  const GradBuffer& running_sum() const { return sum_; }
  uint8_t FirstOf(size_t row) const { return first_of_[row]; }
  const std::map<uint32_t, GradBuffer>& waiting() const { return waiting_; }
  // Adds a row of a transferred running sum, whose first gradients of
  // workers 0 and 1 are `first_of` (kWorker0 | kWorker1 bits).
  void AddToRunningSum(Key key, const float* grad, uint32_t length, uint8_t first_of);
  // Adds a transferred waiting row of worker `worker`.
  void AddWaiting(uint32_t worker, Key key, const float* grad, uint32_t length);

 private:
  GradBuffer TakeBuffer();
  GradBuffer& WaitingOf(uint32_t worker);

  const bool fold_;
  std::vector<GradBuffer>* const spare_;
  const size_t reserve_rows_;
  const size_t reserve_floats_;

  // The running sum (fold_ only) and, per row, which first gradients are in
  // it; empty until a row arrives.
  GradBuffer sum_;
  bool sum_taken_ = false;  // sum_ holds a buffer from TakeBuffer()
  std::vector<uint8_t> first_of_;
  uint8_t in_sum_ = 0;  // kWorker0 | kWorker1: whose gradients the sum holds
  std::map<uint32_t, GradBuffer> waiting_;  // worker -> rows added at Close
};

}  // namespace cairn

#endif  // CAIRN_SERVER_SHARD_BSP_TABLE_SUM_H_
