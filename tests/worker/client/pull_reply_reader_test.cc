// A pull's answer read from the slices gRPC received it in
// (worker/client/pull_reply_reader.h): every field as protobuf parses it,
// each table's values as pieces of those slices, wherever the slices are
// cut; bytes that are not a PullResponse are refused. And the same reader
// (common/received_tables.h) on a push, as a server reads one.
#include "worker/client/pull_reply_reader.h"

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "google/protobuf/util/message_differencer.h"

namespace cairn {
namespace {

v1::PullResponse Answer() {
  v1::PullResponse r;
  r.set_min_clock(7);
  v1::TableValues* w = r.add_tables();
  w->set_table_id(3);
  w->set_table("w");
  w->add_shape(40);
  w->add_shape(3);
  w->set_dtype(v1::DTYPE_BFLOAT16);
  for (int i = 0; i < 300; ++i) w->mutable_values()->push_back(static_cast<char>(i * 7));
  v1::TableValues* empty = r.add_tables();
  empty->set_table_id(4);
  empty->set_table("nothing pulled");
  v1::TableValues* shared = r.add_tables();
  shared->set_table_id(5);
  shared->mutable_shared()->set_region(2);
  shared->mutable_shared()->set_offset(4096);
  shared->mutable_shared()->set_length(64);
  return r;
}

// `wire` in slices of `cut` bytes (the last shorter).
grpc::ByteBuffer Sliced(const std::string& wire, size_t cut) {
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < wire.size(); at += cut) {
    const std::string part = wire.substr(at, cut);
    slices.emplace_back(part.data(), part.size());
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

void Fill(ReceivedPull* received, const std::string& wire, size_t cut) {
  *received->bytes() = Sliced(wire, cut);
}

std::string Joined(const ValuePieces& pieces) {
  std::string s;
  for (absl::Span<const char> p : pieces) s.append(p.data(), p.size());
  return s;
}

TEST_CASE("ReceivedPull reads every field and leaves the values in the received slices") {
  const v1::PullResponse sent = Answer();
  const std::string wire = sent.SerializeAsString();
  for (size_t cut : {size_t{1}, size_t{5}, size_t{64}, wire.size()}) {
    CAPTURE(cut);
    ReceivedPull received;
    Fill(&received, wire, cut);
    v1::PullResponse read;
    read.set_min_clock(99);  // cleared first
    read.add_tables();
    REQUIRE(received.Read(&read).ok());

    v1::PullResponse expected = sent;
    for (v1::TableValues& t : *expected.mutable_tables()) t.clear_values();
    CHECK(google::protobuf::util::MessageDifferencer::Equals(read, expected));
    CHECK(Joined(received.values(0)) == sent.tables(0).values());
    CHECK(received.values(1).empty());
    CHECK(received.values(2).empty());
    // Pieces of the slices, not one copy (gRPC merges slices of a few bytes
    // as they are added, so only larger ones show as they were cut).
    if (cut == 64) CHECK(received.values(0).size() >= sent.tables(0).values().size() / cut);
    if (cut == wire.size()) CHECK(received.values(0).size() == 1);
  }
}

// Read of `wire` cut into slices of `cut` bytes: INTERNAL, saying `what`.
void ExpectRefused(const std::string& wire, size_t cut, const std::string& what) {
  ReceivedPull received;
  Fill(&received, wire, cut);
  v1::PullResponse read;
  const absl::Status s = received.Read(&read);
  CHECK(s.code() == absl::StatusCode::kInternal);
  CHECK_THAT(std::string(s.message()), Catch::Contains(what));
}

TEST_CASE("ReceivedPull refuses bytes that are not a whole PullResponse") {
  const std::string wire = Answer().SerializeAsString();
  SECTION("cut short inside a table's values") {
    ExpectRefused(wire.substr(0, 100), 16, "malformed");
  }
  SECTION("cut short inside a table's other fields") {
    v1::PullResponse one;
    one.add_tables()->set_table("a name longer than the cut");
    ExpectRefused(one.SerializeAsString().substr(0, 10), 3, "malformed");
  }
  SECTION("a tag longer than five bytes, which protobuf refuses") {
    const std::string long_tag("\x8a\x80\x80\x80\x80\x00\x00", 7);
    ExpectRefused(long_tag, 2, "longer than 5 bytes");
    v1::PullResponse parsed;
    CHECK_FALSE(parsed.ParseFromString(long_tag));
  }
  SECTION("a wire type protobuf no longer uses (a group)") {
    ExpectRefused(std::string("\x0b\x0c", 2), 1, "field 1");
  }
}

// A push as a server reads it (common/received_tables.h): every field, the
// riding pull and the written count included, as protobuf parses them, the
// keys in the message, each table's values as pieces.
TEST_CASE("ReceivedTables reads a PushRequest with its values left in the slices") {
  v1::PushRequest sent;
  sent.set_map_version(4);
  sent.set_worker_id(2);
  sent.set_sequence(17);
  sent.set_clock(3);
  sent.set_end_clock(4);
  sent.set_incarnation(9);
  for (int t = 0; t < 2; ++t) {
    v1::TableValues* tv = sent.add_tables();
    tv->set_table_id(static_cast<uint32_t>(t));
    tv->set_table(t == 0 ? "E" : "d");
    for (int i = 0; i < 40 * (t + 1); ++i) tv->mutable_keys()->push_back(static_cast<char>(i));
    for (int i = 0; i < 257 * (t + 1); ++i) {
      tv->mutable_values()->push_back(static_cast<char>(i * 13));
    }
    tv->add_shape(5);
    tv->set_dtype(v1::DTYPE_FLOAT32);
  }
  sent.mutable_pull()->set_clock(4);
  sent.mutable_pull()->add_tables()->set_keys(std::string(24, '\x07'));
  sent.mutable_written()->set_length(8);
  const std::string wire = sent.SerializeAsString();
  for (size_t cut : {size_t{1}, size_t{5}, size_t{64}, wire.size()}) {
    CAPTURE(cut);
    ReceivedTables received;
    *received.bytes() = Sliced(wire, cut);
    v1::PushRequest read;
    REQUIRE(received
                .Read(&read, v1::PushRequest::kTablesFieldNumber,
                      [&read] { return read.add_tables(); },
                      {"the PushRequest", absl::StatusCode::kInvalidArgument})
                .ok());
    v1::PushRequest expected = sent;
    for (v1::TableValues& t : *expected.mutable_tables()) t.clear_values();
    CHECK(google::protobuf::util::MessageDifferencer::Equals(read, expected));
    REQUIRE(received.all_values().size() == 2);
    CHECK(Joined(received.values(0)) == sent.tables(0).values());
    CHECK(Joined(received.values(1)) == sent.tables(1).values());
  }
  // Refused with the caller's code, naming what it read.
  ReceivedTables received;
  *received.bytes() = Sliced(wire.substr(0, wire.size() / 2), wire.size());
  v1::PushRequest read;
  const absl::Status s = received.Read(&read, v1::PushRequest::kTablesFieldNumber,
                                       [&read] { return read.add_tables(); },
                                       {"the PushRequest", absl::StatusCode::kInvalidArgument});
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(s.message()), Catch::Contains("the PushRequest is malformed"));
}

}  // namespace
}  // namespace cairn
