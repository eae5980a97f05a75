#include "server/shard/replica_transfers.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/coordinator_client.h"
#include "common/grpc_util.h"
#include "common/log.h"
#include "common/status_conversion.h"
#include "common/status_macros.h"
#include "server/shard/shard.h"

namespace cairn {

ReplicaTransfers::ReplicaTransfers(uint32_t server_id, Shard* shard,
                                   CoordinatorClient* coordinator, int64_t max_message_bytes,
                                   absl::Duration timeout, absl::Duration dead_after)
    : server_id_(server_id),
      shard_(shard),
      coordinator_(coordinator),
      max_message_bytes_(max_message_bytes),
      timeout_(timeout),
      dead_after_(dead_after),
      thread_([this] { Run(); }) {}

ReplicaTransfers::~ReplicaTransfers() { Stop(); }

void ReplicaTransfers::SendTo(uint32_t group, uint32_t joiner) {
  tasks_.Push({true, group, joiner, absl::InfinitePast()});
}

void ReplicaTransfers::ReportReady(uint32_t group) {
  tasks_.Push({false, group, 0, absl::InfinitePast()});
}

void ReplicaTransfers::Stop() {
  tasks_.Close();
  tasks_.Clear();  // what is not sent yet is dropped: the map moves on without this server
  if (thread_.joinable()) thread_.join();
}

void ReplicaTransfers::Run() {
  while (true) {
    std::optional<Task> next = tasks_.PopFor(absl::Milliseconds(200));
    if (tasks_.closed()) return;
    if (!next.has_value()) continue;
    Task task = *next;
    if (const absl::Time now = absl::Now(); task.not_before > now) {
      // Not due yet: to the back, and a short wait so that a lone task
      // waiting out its retry delay does not spin.
      tasks_.Push(task);
      absl::SleepFor(std::min(task.not_before - now, absl::Milliseconds(50)));
      continue;
    }
    bool maybe_installed = false;
    absl::Status s =
        task.send ? Send(task.group, task.joiner, &maybe_installed) : Report(task.group);
    if (s.ok()) continue;
    if (absl::IsFailedPrecondition(s) && task.send) {
      // The map moved on (the joiner left it, or is a backup already): the
      // forward list follows the map, not this transfer.
      LOG_INFO("transfer of replica group {} to server {} dropped: {}", task.group, task.joiner,
               s.message());
      continue;
    }
    // A joiner that may hold the copy (the end was sent, its answer lost)
    // keeps getting the group's pushes: the retry finds it installed.
    if (task.send && !maybe_installed) shard_->DropJoiner(task.group, task.joiner);
    ++task.attempts;
    if (task.send && task.attempts == 1 && absl::IsUnavailable(s)) {
      // The coordinator lists a new server as a joiner as it registers,
      // often before the server has its answer and serves: not a failure.
      LOG_INFO("transfer of replica group {} to server {}: not served yet ({}); trying again "
               "in 200ms",
               task.group, task.joiner, s.message());
      task.not_before = absl::Now() + absl::Milliseconds(200);
    } else {
      LOG_WARN("{} of replica group {}{} failed: {}; trying again in 1s",
               task.send ? "transfer" : "ready report", task.group,
               task.send ? absl::StrCat(" to server ", task.joiner) : "", s.message());
      task.not_before = absl::Now() + absl::Seconds(1);
    }
    tasks_.Push(task);
  }
}

absl::Status ReplicaTransfers::Send(uint32_t group, uint32_t joiner, bool* maybe_installed) {
  const std::string address = shard_->AddressOf(joiner);
  if (address.empty()) {
    return absl::UnavailableError(absl::StrCat("server ", joiner, " has no address in the map"));
  }
  const absl::Time start = absl::Now();
  ASSIGN_OR_RETURN(std::vector<v1::ReplicaChunk> chunks, shard_->ExportGroup(group, joiner));
  auto& stub = stubs_[address];
  if (stub == nullptr) {
    stub = v1::ParameterService::NewStub(MakeChannel(address, max_message_bytes_, dead_after_));
  }
  const uint64_t transfer_id = static_cast<uint64_t>(absl::ToUnixMicros(start));
  uint64_t bytes = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    v1::ReplicaChunk& chunk = chunks[i];
    chunk.set_transfer_id(transfer_id);
    chunk.set_primary(server_id_);
    bytes += chunk.ByteSizeLong();
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + timeout_));
    v1::ReplicaChunkResponse response;
    grpc::Status s = stub->Replicate(&context, chunk, &response);
    if (!s.ok()) {
      absl::Status status = FromGrpcStatus(s);
      if (absl::IsAlreadyExists(status)) {
        LOG_INFO("server {} holds replica group {} already: {}", joiner, group, status.message());
        return absl::OkStatus();
      }
      *maybe_installed = i + 1 == chunks.size();
      // Refused by the joiner: its map may lag this server's (it does not
      // list the join yet). Only this server's own map ends the transfer
      // (ExportGroup's FailedPrecondition), so this one is retried.
      if (absl::IsFailedPrecondition(status)) {
        status = absl::UnavailableError(status.message());
      }
      return Annotate(status, absl::StrCat("send replica group ", group, " to server ", joiner,
                                           " at ", address));
    }
  }
  LOG_INFO("sent replica group {} to server {}: {} chunks, {} bytes in {}", group, joiner,
           chunks.size(), bytes, absl::FormatDuration(absl::Now() - start));
  return absl::OkStatus();
}

absl::Status ReplicaTransfers::Report(uint32_t group) {
  v1::ReplicaReadyRequest request;
  request.set_server_id(server_id_);
  request.set_group(group);
  return coordinator_->ReplicaReady(request, timeout_).status();
}

}  // namespace cairn
