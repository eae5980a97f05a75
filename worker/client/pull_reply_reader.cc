#include "worker/client/pull_reply_reader.h"

namespace cairn {

absl::Status ReceivedPull::Read(v1::PullResponse* response) {
  return received_.Read(
      response, v1::PullResponse::kTablesFieldNumber, [response] { return response->add_tables(); },
      {"the server's PullResponse", absl::StatusCode::kInternal});
}

}  // namespace cairn
