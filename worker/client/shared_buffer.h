// A buffer of the worker's shared region with a server, lent to the
// caller (Client::LendSharedBuffer, ShardChannel::Lend).
#ifndef CAIRN_WORKER_CLIENT_SHARED_BUFFER_H_
#define CAIRN_WORKER_CLIENT_SHARED_BUFFER_H_

#include "absl/types/span.h"

namespace cairn {

// Memory of the worker's shared region with a server on its host
// (Client::LendSharedBuffer), lent to the caller: a push whose values lie
// in it, and a pull whose buffers do, are not copied through the region but
// read and written there in place, as one range per request, when the
// request's values are laid out in it exactly as on the wire (float32
// tables, each request's tables one after the other, whole chunks in key
// order: a dense model's flat layout).
//
// Thread-safe. Destroy it only once no call using it is in flight.
class SharedBuffer {
 public:
  virtual ~SharedBuffer() = default;
  // Cache-line aligned; the same for the buffer's life.
  virtual absl::Span<char> bytes() = 0;
  // True once a call that used this memory in place failed: its server may
  // still read or write it late, so the memory stays out of use for good
  // once this buffer is destroyed. Take another buffer (or the caller's own
  // memory) for the next calls; what a failed pull left here is not
  // trustworthy.
  virtual bool spoiled() const = 0;
};

}  // namespace cairn

#endif  // CAIRN_WORKER_CLIENT_SHARED_BUFFER_H_
