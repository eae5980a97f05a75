// The zero-copy push serialization (workers; primaries forwarding to
// backups): the bytes gRPC sends are an ordinary PushRequest, and the
// caller's memory is released only when the last slice is.
#include "common/push_payload.h"

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/byte_buffer.h>

#include <catch2/catch.hpp>
#include <memory>
#include <numeric>
#include <vector>

#include "google/protobuf/util/message_differencer.h"

namespace cairn {
namespace {

absl::Span<const char> Bytes(const float* p, size_t n) {
  return absl::MakeConstSpan(reinterpret_cast<const char*>(p), n * sizeof(float));
}

v1::PushRequest Parse(const grpc::ByteBuffer& bytes) {
  grpc::ByteBuffer copy(bytes);
  v1::PushRequest r;
  REQUIRE(grpc::SerializationTraits<v1::PushRequest>::Deserialize(&copy, &r).ok());
  return r;
}

PushPayload TwoTables(const std::vector<float>& dense, const std::vector<float>& rows) {
  PushPayload p;
  p.header.set_map_version(7);
  p.header.set_worker_id(3);
  p.header.set_sequence(11);
  p.header.set_clock(5);
  p.header.set_group(2);
  p.header.set_incarnation(9);
  PushTablePayload& d = p.tables.emplace_back();
  d.meta.set_table_id(0);
  d.meta.set_table("w");
  d.meta.set_dtype(v1::DTYPE_FLOAT32);
  d.meta.add_shape(static_cast<int64_t>(dense.size()));
  d.meta.set_keys(std::string(16, '\1'));
  // Two adjacent chunks: one range.
  PushPayload::AddRange(&d, Bytes(dense.data(), dense.size() / 2));
  PushPayload::AddRange(&d, Bytes(dense.data() + dense.size() / 2, dense.size() - dense.size() / 2));
  PushPayload::Seal(&d);
  PushTablePayload& s = p.tables.emplace_back();
  s.meta.set_table_id(1);
  s.meta.set_table("emb");
  s.meta.set_dtype(v1::DTYPE_FLOAT32);
  // Every other row of width 4: not adjacent, one range each.
  for (size_t r = 0; r < rows.size() / 4; r += 2) PushPayload::AddRange(&s, Bytes(&rows[r * 4], 4));
  PushPayload::Seal(&s, /*max_ranges=*/1000);
  return p;
}

TEST_CASE("SerializePush writes the PushRequest that protobuf would, values from the caller's memory") {
  std::vector<float> dense(40000);
  std::iota(dense.begin(), dense.end(), 0.5f);
  std::vector<float> rows(4 * 10);
  std::iota(rows.begin(), rows.end(), -3.0f);
  PushPayload p = TwoTables(dense, rows);
  CHECK(p.tables[0].values.size() == 1);
  CHECK(p.tables[1].values.size() == 5);
  CHECK(p.tables[1].gathered == nullptr);

  const v1::PushRequest expected = p.ToProto();
  CHECK(expected.tables(0).values().size() == dense.size() * sizeof(float));
  CHECK(expected.tables(1).values().size() == 5 * 4 * sizeof(float));
  auto pin = std::make_shared<int>(0);
  const grpc::ByteBuffer bytes = SerializePush(p, pin);
  CHECK(bytes.Length() == expected.ByteSizeLong());
  CHECK(google::protobuf::util::MessageDifferencer::Equals(Parse(bytes), expected));

  // A retry serializes the same bytes again with a new map version.
  p.header.set_map_version(8);
  v1::PushRequest again = Parse(SerializePush(p, pin));
  CHECK(again.map_version() == 8);
  again.set_map_version(7);
  CHECK(google::protobuf::util::MessageDifferencer::Equals(again, expected));
}

TEST_CASE("Seal copies values that lie in many pieces into one buffer") {
  std::vector<float> rows(4 * 10);
  std::iota(rows.begin(), rows.end(), 1.0f);
  PushPayload p = TwoTables(std::vector<float>(8, 1.0f), rows);
  PushTablePayload& s = p.tables[1];
  const v1::PushRequest before = p.ToProto();
  PushPayload::Seal(&s, /*max_ranges=*/2);
  REQUIRE(s.gathered != nullptr);
  CHECK(s.values.size() == 1);
  CHECK(p.ToProto().tables(1).values() == before.tables(1).values());
}

TEST_CASE("the pin is held while a serialized push's bytes are alive, and released after") {
  std::vector<float> dense(1024, 2.0f);
  std::vector<float> rows(8, 1.0f);
  PushPayload p = TwoTables(dense, rows);
  auto pin = std::make_shared<int>(0);
  std::weak_ptr<int> watch = pin;
  {
    grpc::ByteBuffer bytes = SerializePush(p, pin);
    grpc::ByteBuffer copy(bytes);  // gRPC's own reference, as a send takes
    pin.reset();
    CHECK_FALSE(watch.expired());
    bytes.Clear();
    CHECK_FALSE(watch.expired());  // the copy still refers to the slices
  }
  CHECK(watch.expired());
}

TEST_CASE("a push with no tables serializes its header alone") {
  PushPayload p;
  p.header.set_sequence(1);
  p.header.set_worker_id(4);
  v1::PushRequest r = Parse(SerializePush(p, std::make_shared<int>(0)));
  CHECK(r.sequence() == 1);
  CHECK(r.worker_id() == 4);
  CHECK(r.tables_size() == 0);
}

}  // namespace
}  // namespace cairn
