#include "worker/client/clock_ticker.h"

#include <grpcpp/grpcpp.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_conversion.h"
#include "common/status_macros.h"

namespace cairn {

ClockTicker::ClockTicker(Hooks hooks, uint32_t worker_id, uint64_t incarnation,
                         absl::Duration rpc_deadline)
    : hooks_(std::move(hooks)),
      worker_id_(worker_id),
      incarnation_(incarnation),
      rpc_deadline_(rpc_deadline) {}

ClockTicker::~ClockTicker() { Drain().IgnoreError(); }

void ClockTicker::Send(uint32_t server, int64_t clock, absl::Time give_up) {
  Attempt(server, clock, 0, give_up);
}

void ClockTicker::Attempt(uint32_t server, int64_t clock, int attempt, absl::Time give_up) {
  struct Call {
    grpc::ClientContext context;
    v1::ClockRequest request;
    v1::ClockResponse response;
  };
  const Route route = hooks_.route(server);
  if (route.channel == nullptr) return;  // gone
  auto* call = new Call;
  call->context.set_deadline(absl::ToChronoTime(absl::Now() + rpc_deadline_));
  call->request.set_map_version(route.map_version);
  call->request.set_server(server);
  call->request.set_worker_id(worker_id_);
  call->request.set_incarnation(incarnation_);
  call->request.set_clock(clock);
  {
    absl::MutexLock lock(&mu_);
    ++in_flight_;
  }
  route.channel->Clock(
      &call->context, &call->request, &call->response,
      [this, call, server, clock, attempt, give_up](grpc::Status s) {
        delete call;
        if (!s.ok() && RetriableShardStatus(s) &&
            absl::Now() + kShardRetryBackoff.Delay(attempt) < give_up) {
          // The server may be failing over: refresh the map and tick it
          // again while it is alive. Still in flight until then.
          hooks_.post([this, server, clock, attempt, give_up] {
            absl::SleepFor(kShardRetryBackoff.Delay(attempt));
            if (absl::Status lost = hooks_.lost(); !lost.ok()) {
              End(lost);  // no retry can succeed
              return;
            }
            if (absl::Status r = hooks_.refresh_map(); !r.ok()) {
              LOG_WARN("map refresh before a clock retry failed: {}", r.message());
            }
            Attempt(server, clock, attempt + 1, give_up);
            End(absl::OkStatus());
          });
          return;
        }
        End(s.ok() ? absl::OkStatus()
                   : Annotate(FromGrpcStatus(s), absl::StrCat("clock to server ", server)));
      });
}

void ClockTicker::End(absl::Status failure) {
  absl::MutexLock lock(&mu_);
  if (!failure.ok() && error_.ok()) error_ = std::move(failure);
  --in_flight_;
}

absl::Status ClockTicker::error() const {
  absl::MutexLock lock(&mu_);
  return error_;
}

absl::Status ClockTicker::Drain() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(+[](int* n) { return *n == 0; }, &in_flight_));
  return error_;
}

}  // namespace cairn
