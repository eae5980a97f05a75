// A call slot: one request and its answer passed through a worker's shared
// region (docs/shared-memory.md, "Calls through the region") instead of a
// gRPC call, between a worker and a server on one host that both poll for
// their calls (rpc.busy_poll).
//
// On this path a step of a one-server job is one push that carries its
// tick and the next pull; gRPC's framing and the system calls that send
// and receive it on both sides were most of that call's cost (about 0.24
// of 0.34 ms, docs/benchmarks.md). Through the slot the worker writes the
// serialized request and sets the state word; the server's polling thread
// sees it, serves the request as it serves the gRPC method, writes the
// answer and sets the state word back: no system call on either side.
//
// The protocol, on the words of CallSlotHeader (all sequentially
// consistent):
//   - The worker posts a call only in state kIdle: it writes the request
//     and its fields, then stores kPosted, then reads `serving`.
//   - The server's polling thread takes a call by changing kPosted to
//     kTaken; it stores its answer, then kAnswered. The worker reads the
//     answer and stores kIdle. An answer may decline the call unserved
//     (kDeclined): the worker then sends it through gRPC.
//   - The server stores serving = 1 while its thread polls and 0 before it
//     sleeps, then looks at its slots once more. A worker that reads
//     serving == 0 after posting (or sees its call not taken in time: a
//     stopped or killed server) withdraws it by changing kPosted back to
//     kIdle, and sends it through gRPC. Exactly one of the take and the
//     withdraw succeeds, so no call is served twice or lost: the server
//     either saw kPosted before it slept or the worker saw serving == 0.
//   - A taken call not answered by its deadline fails (DEADLINE_EXCEEDED)
//     and the worker never posts through that slot again (a late answer
//     may still be written).
//
// The layout is shared by both sides; nothing here is thread-safe beyond
// the atomics' own guarantees.
#ifndef CAIRN_COMMON_CALL_SLOT_H_
#define CAIRN_COMMON_CALL_SLOT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cairn {

namespace call_slot {

// The slot's state word.
inline constexpr uint32_t kIdle = 0;
inline constexpr uint32_t kPosted = 1;
inline constexpr uint32_t kTaken = 2;
inline constexpr uint32_t kAnswered = 3;

// The method a posted call is for.
inline constexpr uint32_t kPush = 1;
inline constexpr uint32_t kPull = 2;

// CallSlotHeader::status_code of an answer that declines the call before
// serving any of it: the worker sends it through gRPC instead (a pull
// whose answer has no room in the region, say).
inline constexpr int32_t kDeclined = -1;

// A slot's size and where its areas lie: the header, the request's bytes,
// then the answer's (status message, the status's binary details, then the
// response's bytes).
// The request's room holds the keys of a sparse push of 11,000 rows (8
// bytes each; the rows themselves lie in the region).
inline constexpr uint64_t kBytes = 128 * 1024;
inline constexpr uint64_t kHeaderBytes = 64;
inline constexpr uint64_t kRequestCapacity = 88 * 1024;
inline constexpr uint64_t kAnswerOffset = kHeaderBytes + kRequestCapacity;
inline constexpr uint64_t kAnswerCapacity = kBytes - kAnswerOffset;

}  // namespace call_slot

// At the slot's start (64-byte aligned in the region).
struct CallSlotHeader {
  std::atomic<uint32_t> state;    // call_slot::kIdle etc.
  std::atomic<uint32_t> serving;  // 1 while the server's thread polls
  // Written by the worker before it posts.
  uint32_t method;
  uint32_t request_bytes;
  int64_t deadline_unix_ns;  // the call's deadline (absl::ToUnixNanos)
  // Written by the server before kAnswered.
  int32_t status_code;  // grpc::StatusCode
  uint32_t message_bytes;
  uint32_t details_bytes;  // grpc::Status::error_details (a stale map's, say)
  uint32_t response_bytes;
  // Written by the server when it accepts the slot: its process id, for a
  // worker to tell a server that exited from one that is slow.
  int32_t server_pid;
};
static_assert(sizeof(CallSlotHeader) <= call_slot::kHeaderBytes);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

}  // namespace cairn

#endif  // CAIRN_COMMON_CALL_SLOT_H_
