// A pull's answer read into the reply's own slice (server/shard/rpc/pull_reply.h):
// on the wire it is the PullResponse a shard serves inline, and its values
// go out as the slice they were read into, not a copy.
#include "server/shard/rpc/pull_reply.h"

#include <grpcpp/impl/codegen/proto_utils.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "common/bytes.h"
#include "google/protobuf/util/message_differencer.h"
#include "server/shard/shard.h"
#include "tests/server/shard/shard_test_util.h"

namespace cairn {
namespace {

v1::PullResponse Parse(const grpc::ByteBuffer& bytes) {
  grpc::ByteBuffer copy(bytes);
  v1::PullResponse r;
  REQUIRE(grpc::SerializationTraits<v1::PullResponse>::Deserialize(&copy, &r).ok());
  return r;
}

// A dense table of 40 floats in chunks of 12, the last of 4 (ASP: pulls
// never wait).
v1::TableSpec Vector(const std::string& name) {
  v1::TableSpec t = ScalarTable(name, v1::CONSISTENCY_ASP);
  t.clear_shape();
  t.add_shape(40);
  t.set_chunk_size(12);
  return t;
}

v1::PullRequest PullOf(std::vector<Key> w_chunks, std::vector<Key> b_chunks, v1::DType b_dtype) {
  v1::PullRequest request;
  request.set_map_version(1);
  request.set_worker_id(0);
  request.set_incarnation(1);
  request.set_clock(0);
  v1::TableKeys* w = request.add_tables();
  w->set_table_id(0);
  w->set_table("w");
  w->set_keys(KeysToBytes(w_chunks));
  v1::TableKeys* b = request.add_tables();
  b->set_table_id(1);
  b->set_table("b");
  b->set_keys(KeysToBytes(b_chunks));
  b->set_dtype(b_dtype);
  return request;
}

absl::Status Serve(Shard& shard, const v1::PullRequest& request, v1::PullResponse* response,
                   PullReplyArea area = {}) {
  absl::Status status = absl::InternalError("not answered");
  shard.Pull(&request, response, absl::InfiniteFuture(), [&](absl::Status s) { status = s; },
             std::move(area));
  return status;
}

TEST_CASE("A pull read into the reply's slice is the PullResponse served inline, values uncopied") {
  Shard shard(0, Job({Vector("w"), Vector("b")}), nullptr);
  REQUIRE(shard.InstallMap(Map(4, {0})).ok());
  // Values that are not all zeros: one push to each (SGD, lr 1).
  for (uint32_t t = 0; t < 2; ++t) {
    v1::PushRequest push = PushScalar(0, t + 1, 0, 0.0f, t, t == 0 ? "w" : "b");
    v1::TableValues* tv = push.mutable_tables(0);
    tv->clear_shape();
    tv->add_shape(40);
    tv->set_keys(KeysToBytes({0, 1, 2, 3}));
    std::vector<float> g(40);
    for (int i = 0; i < 40; ++i) g[i] = 1.0f + static_cast<float>(i) + 0.5f * t;
    tv->set_values(FloatsToBytes(g));
    REQUIRE(shard.Push(push).ok());
  }
  for (v1::DType b_dtype : {v1::DTYPE_FLOAT32, v1::DTYPE_BFLOAT16, v1::DTYPE_FLOAT16}) {
    INFO("table b's values as " << v1::DType_Name(b_dtype));
    const v1::PullRequest request = PullOf({3, 0, 2}, {1, 3}, b_dtype);
    v1::PullResponse inline_response;
    REQUIRE(Serve(shard, request, &inline_response).ok());

    PullReplyBuffer buffer;
    absl::Span<char> room;
    PullReplyArea area;
    area.allocate = [&](uint64_t bytes) { return room = buffer.Allocate(bytes); };
    v1::PullResponse response;
    REQUIRE(Serve(shard, request, &response, area).ok());
    REQUIRE(buffer.allocated());
    // 4 + 12 + 12 floats of w, then 12 + 4 of b (slices above gRPC's
    // 23 bytes: smaller ones it copies inline).
    const size_t b_bytes = b_dtype == v1::DTYPE_FLOAT32 ? 4 : 2;
    CHECK(room.size() == 28 * 4 + 16 * b_bytes);
    CHECK(response.tables(0).values().empty());
    CHECK(response.tables(0).has_shared());

    const grpc::ByteBuffer bytes = buffer.Serialize(response);
    const v1::PullResponse parsed = Parse(bytes);
    std::string difference;
    google::protobuf::util::MessageDifferencer differ;
    differ.ReportDifferencesToString(&difference);
    CHECK(differ.Compare(parsed, inline_response));
    INFO(difference);

    // The values travel as the slice they were read into.
    std::vector<grpc::Slice> slices;
    REQUIRE(bytes.Dump(&slices).ok());
    int in_place = 0;
    for (const grpc::Slice& s : slices) {
      const char* p = reinterpret_cast<const char*>(s.begin());
      if (p >= room.data() && p < room.data() + room.size()) ++in_place;
    }
    CHECK(in_place == 2);
  }
}

TEST_CASE("PullReplyBuffer serializes inline tables and the min clock as protobuf does") {
  PullReplyBuffer buffer;
  absl::Span<char> room = buffer.Allocate(8);
  const std::vector<float> two = {1.5f, -2.0f};
  std::memcpy(room.data(), two.data(), 8);
  v1::PullResponse response;
  response.set_min_clock(-1);
  v1::TableValues* inline_table = response.add_tables();
  inline_table->set_table_id(4);
  inline_table->set_table("inline");
  inline_table->set_values(FloatsToBytes({7.0f}));
  v1::TableValues* here = response.add_tables();
  here->set_table_id(5);
  here->set_table("here");
  here->add_shape(2);
  here->mutable_shared()->set_offset(0);
  here->mutable_shared()->set_length(8);
  v1::TableValues* empty = response.add_tables();
  empty->set_table_id(6);
  empty->set_table("empty");
  empty->mutable_shared()->set_offset(8);
  empty->mutable_shared()->set_length(0);

  const v1::PullResponse parsed = Parse(buffer.Serialize(response));
  v1::PullResponse expected = response;
  expected.mutable_tables(1)->clear_shared();
  expected.mutable_tables(1)->set_values(FloatsToBytes(two));
  expected.mutable_tables(2)->clear_shared();
  CHECK(google::protobuf::util::MessageDifferencer::Equals(parsed, expected));

  // An empty answer is an empty message.
  PullReplyBuffer none;
  CHECK(Parse(none.Serialize(v1::PullResponse())).ByteSizeLong() == 0);
}

}  // namespace
}  // namespace cairn
