// The ctr model's parameters on Cairn's servers: the head's dense tables and
// the 26 embedding tables pulled (pushed) in one Client operation, one
// request per server for all 27+ tables (Client::PullAndWait / Client::PushAndClock),
// or the next step's pull sent with the push (Client::PushClockAndPull).
#ifndef CAIRN_WORKER_TRAINER_PS_CTR_STORE_H_
#define CAIRN_WORKER_TRAINER_PS_CTR_STORE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/client/client.h"
#include "worker/trainer/ctr_store.h"
#include "worker/trainer/ps_trainer.h"

namespace cairn {

// Not thread-safe; one training loop drives it. The Client must outlive it.
class PsCtrStore final : public CtrParameterStore {
 public:
  // FailedPrecondition naming the table when the job lacks one of the
  // model's tables or has it with another kind, shape or width.
  static absl::StatusOr<std::unique_ptr<PsCtrStore>> Create(
      Client* client, std::vector<BoundTable> head, size_t head_params,
      const std::vector<v1::TableSpec>& fields);

  absl::StatusOr<absl::Span<const float>> Pull(const std::vector<std::vector<Key>>& keys,
                                               FieldRows* rows) override;
  absl::Status PushAndClock(absl::Span<const float> head_grads,
                            const std::vector<std::vector<Key>>& keys,
                            const FieldRows& row_grads) override;
  // One round trip (Client::PushClockAndPull); a failed read ahead is
  // logged and returns nullopt, so the next step pulls again.
  absl::StatusOr<std::optional<absl::Span<const float>>> PushClockAndPull(
      absl::Span<const float> head_grads, const std::vector<std::vector<Key>>& keys,
      const FieldRows& row_grads, const std::vector<std::vector<Key>>& next_keys,
      FieldRows* next_rows) override;
  int64_t StartStep() const override { return head_->StartStep(); }
  bool WaitsOnServers() const override { return true; }

 private:
  PsCtrStore(Client* client, std::unique_ptr<PsParameterStore> head,
             std::vector<std::string> fields, std::vector<size_t> widths)
      : client_(client),
        head_(std::move(head)),
        fields_(std::move(fields)),
        widths_(std::move(widths)) {}

  std::vector<SparseRows> RowBuffers(const std::vector<std::vector<Key>>& keys,
                                     FieldRows* rows) const;
  std::vector<ConstSparseRows> RowGrads(const std::vector<std::vector<Key>>& keys,
                                        const FieldRows& grads) const;

  Client* const client_;
  std::unique_ptr<PsParameterStore> head_;
  const std::vector<std::string> fields_;  // table names, field order
  const std::vector<size_t> widths_;
};

}  // namespace cairn

#endif  // CAIRN_WORKER_TRAINER_PS_CTR_STORE_H_
