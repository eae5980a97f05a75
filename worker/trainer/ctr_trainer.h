// Trains the ctr model (ctr_model.h) with the loop of trainer.h: per step
// the batch's distinct ids per field are pulled with the head, the step
// runs, and each row's gradient (summed over the batch's examples that use
// it) is pushed once. After each epoch the test split is scored in chunks:
// log loss (test_loss), accuracy at p = 0.5 and ROC AUC (test_auc).
//
// Row gradients are scaled by 1 / num_workers: the embedding tables sum what
// the workers push (aggregation sum) while the head's tables take the mean,
// so under BSP W workers with batch b train as one with batch W * b.
#ifndef CAIRN_WORKER_TRAINER_CTR_TRAINER_H_
#define CAIRN_WORKER_TRAINER_CTR_TRAINER_H_

#include "absl/status/statusor.h"
#include "worker/trainer/criteo_reader.h"
#include "worker/trainer/ctr_model.h"
#include "worker/trainer/ctr_store.h"
#include "worker/trainer/trainer.h"

namespace cairn {

// Errors: as RunTraining; InvalidArgument when the batch size exceeds the
// model's max_batch or a split is empty.
absl::StatusOr<TrainingSummary> TrainCtr(CtrModel& model, CtrParameterStore& store,
                                         const CriteoData& train, const CriteoData& test,
                                         const TrainerOptions& options);

}  // namespace cairn

#endif  // CAIRN_WORKER_TRAINER_CTR_TRAINER_H_
