// The raw-gRPC references of cairn-bench: the same bytes as a Cairn push or
// pull, moved (a) by one unary call and (b) by one streaming call carrying
// several pieces in flight. Server and channel use Cairn's settings
// (common/grpc_util.h), so message-size limits and keepalive are the same.
#ifndef CAIRN_TOOLS_BENCH_BENCH_REFERENCE_H_
#define CAIRN_TOOLS_BENCH_BENCH_REFERENCE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "tools/bench/bench.grpc.pb.h"

namespace cairn::bench {

// Largest reply the reference server sends (its pull source buffer).
inline constexpr uint64_t kMaxReferenceReplyBytes = uint64_t{64} << 20;

// Runs the reference server on 127.0.0.1 (free port), writes "grpc=<port>"
// to `port_file` once serving, and serves until SIGTERM or SIGINT. Push
// handlers only count the bytes; pull handlers copy the reply out of one
// preallocated buffer (as Cairn's server copies out of its table). Returns a
// process exit code: 0 after a signal, 3 when it cannot listen, 1 otherwise.
int RunReferenceServer(const std::string& port_file, int64_t max_message_bytes);

// Sync client of the reference server. Each call copies between the caller's
// buffers and the messages, as a real caller (and Cairn's client) must.
// Not thread-safe; confined to the measuring thread.
class ReferenceClient {
 public:
  ReferenceClient(const std::string& address, int64_t max_message_bytes);

  // Unavailable when the server does not accept a connection within `timeout`.
  absl::Status WaitReady(absl::Duration timeout);

  // One unary call carrying `keys` then `values` (bytes) in one message.
  absl::Status UnaryPush(absl::Span<const char> keys, absl::Span<const char> values) {
    return OnePush(keys, values, /*callback=*/false);
  }
  // One unary call sending `keys`; the reply (out.size() bytes) is copied to `out`.
  absl::Status UnaryPull(absl::Span<const char> keys, absl::Span<char> out) {
    return OnePull(keys, out, /*callback=*/false);
  }
  // The same two calls through gRPC's callback API, the caller waiting on a
  // future that the completion sets from a gRPC thread: how Cairn's client
  // completes its calls. Beside UnaryPush/UnaryPull, the difference is the
  // cost of that hand-off alone.
  absl::Status CallbackPush(absl::Span<const char> keys, absl::Span<const char> values) {
    return OnePush(keys, values, /*callback=*/true);
  }
  absl::Status CallbackPull(absl::Span<const char> keys, absl::Span<char> out) {
    return OnePull(keys, out, /*callback=*/true);
  }
  // One client stream: `values` in pieces of `piece_bytes` (the first piece
  // also carries `keys`), written back to back; done when the server acks.
  absl::Status StreamPush(absl::Span<const char> keys, absl::Span<const char> values,
                          uint64_t piece_bytes);
  // One server stream: sends `keys`, receives out.size() bytes in pieces of
  // `piece_bytes`, each copied into `out` in order.
  absl::Status StreamPull(absl::Span<const char> keys, absl::Span<char> out,
                          uint64_t piece_bytes);

 private:
  // One unary call, blocking or through the callback API.
  absl::Status OnePush(absl::Span<const char> keys, absl::Span<const char> values, bool callback);
  absl::Status OnePull(absl::Span<const char> keys, absl::Span<char> out, bool callback);

  const std::string address_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<ReferenceService::Stub> stub_;
};

// Piece size of the stream references for a transfer of `total_bytes`:
// min(1 MiB, ceil(total / 4)), rounded up to 4 bytes, so at least four pieces
// are in flight and none exceeds the ~1 MiB pieces `rpc.request_split_size` cuts by default.
uint64_t StreamPieceBytes(uint64_t total_bytes);

}  // namespace cairn::bench

#endif  // CAIRN_TOOLS_BENCH_BENCH_REFERENCE_H_
