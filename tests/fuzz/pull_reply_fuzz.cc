// Fuzz target: the bytes of a pull's answer as a worker reads them off
// gRPC (worker/client/pull_reply_reader.h): ReceivedPull::Read over the
// bytes cut into slices. Layout: the first byte is the slice length (0: one
// slice), the rest the PullResponse bytes.
//
// Checks beyond the sanitizers: what Read accepts, protobuf parses too, to
// the same message (each table's values the join of its pieces; unknown
// fields aside); what protobuf parses, Read accepts unless it holds a group
// (a wire type protobuf keeps only as an unknown field).
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/fuzz/fuzz_util.h"
#include "worker/client/pull_reply_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cairn;
  fuzz::Quiet();
  if (size == 0) return 0;
  const size_t cut = data[0] == 0 ? size : data[0];
  const std::string wire(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < wire.size(); at += cut) {
    const std::string part = wire.substr(at, cut);
    slices.emplace_back(part.data(), part.size());
  }
  ReceivedPull received;
  *received.bytes() = grpc::ByteBuffer(slices.data(), slices.size());
  v1::PullResponse read;
  const absl::Status status = received.Read(&read);

  v1::PullResponse parsed;
  const bool protobuf_ok = parsed.ParseFromString(wire);
  if (!status.ok()) {
    if (protobuf_ok && !absl::StrContains(status.message(), "field")) {
      fuzz::Fail(absl::StrCat("protobuf parses what Read refused: ", status.message()));
    }
    return 0;
  }
  if (!protobuf_ok) fuzz::Fail("Read accepted bytes protobuf cannot parse");
  for (int i = 0; i < read.tables_size(); ++i) {
    std::string joined;
    for (absl::Span<const char> p : received.values(i)) joined.append(p.data(), p.size());
    if (!read.tables(i).values().empty()) fuzz::Fail("Read left values in the message");
    read.mutable_tables(i)->set_values(joined);
  }
  read.DiscardUnknownFields();
  parsed.DiscardUnknownFields();
  if (!google::protobuf::util::MessageDifferencer::Equals(read, parsed)) {
    fuzz::Fail("Read and protobuf parse the bytes to different messages");
  }
  return 0;
}
