// A push's values read where gRPC received them (server/shard/piece_rows.h,
// common/value_pieces.h): rows cut anywhere and at any byte alignment come
// out whole; the finiteness check finds a value cut in two and names it as
// the joined values would; and a shard given a push's values in pieces
// (Shard::Push's `values`) ends bit for bit where the same push with its
// values in the message leaves it, or refuses it the same way, unchanged.
#include "server/shard/piece_rows.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/wire_dtype.h"
#include "server/shard/shard.h"
#include "server/shard/table.h"
#include "tests/server/shard/checkpoint_test_util.h"
#include "tests/server/shard/shard_test_util.h"

namespace cairn {
namespace {

// `bytes` copied one byte past an aligned start (no float in it aligned)
// and cut into pieces of `cut` bytes (the last shorter). `held` keeps the
// memory.
ValuePieces Cut(const std::string& bytes, size_t cut, std::string* held) {
  *held = "x" + bytes;
  ValuePieces pieces;
  for (size_t at = 0; at < bytes.size(); at += cut) {
    pieces.push_back(absl::Span<const char>(held->data() + 1 + at,
                                            std::min(cut, bytes.size() - at)));
  }
  return pieces;
}

std::string Bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

TEST_CASE("PieceRows gives each row whole, however the pieces are cut", "[shard]") {
  constexpr size_t kRows = 10, kWidth = 3;
  std::vector<float> values(kRows * kWidth);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.5f * static_cast<float>(i) - 4.0f;
  const std::string bytes = Bytes(values);
  for (size_t cut : {size_t{1}, size_t{3}, size_t{5}, size_t{12}, size_t{13}, size_t{64},
                     bytes.size()}) {
    CAPTURE(cut);
    std::string held;
    const ValuePieces pieces = Cut(bytes, cut, &held);
    PieceRows rows(pieces, kWidth);
    for (size_t i = 0; i < kRows; ++i) {
      CHECK(std::memcmp(rows.Row(i), values.data() + i * kWidth, kWidth * sizeof(float)) == 0);
    }
    // Back to an earlier row, as a push gathered after all reads it again.
    CHECK(std::memcmp(rows.Row(2), values.data() + 2 * kWidth, kWidth * sizeof(float)) == 0);
    CHECK(std::memcmp(rows.Row(9), values.data() + 9 * kWidth, kWidth * sizeof(float)) == 0);

    // Held rows: a batch of rows asked for first, read after (every row
    // cut when the pieces are 1 byte long).
    constexpr size_t kHeld = 4;
    PieceRows batch(pieces, kWidth, kHeld);
    for (size_t first = 0; first < kRows; first += kHeld) {
      const size_t end = std::min(kRows, first + kHeld);
      std::vector<const void*> got;  // (a template argument drops UnalignedFloat's attribute)
      for (size_t i = first; i < end; ++i) got.push_back(batch.Row(i));
      for (size_t i = first; i < end; ++i) {
        CAPTURE(i);
        CHECK(std::memcmp(got[i - first], values.data() + i * kWidth, kWidth * sizeof(float)) ==
              0);
      }
    }
  }
  // Rows lying whole in a piece are used in place, at whatever address the
  // piece puts them (here one byte past a float's alignment).
  for (size_t shift : {size_t{0}, size_t{1}, size_t{2}, size_t{3}}) {
    CAPTURE(shift);
    const std::string shifted = std::string(shift, '\x7f') + bytes;
    const char* base = shifted.data() + shift;
    const size_t first = 2 * kWidth * sizeof(float);
    const ValuePieces whole_rows = {absl::Span<const char>(base, first),
                                    absl::Span<const char>(base + first, bytes.size() - first)};
    PieceRows rows(whole_rows, kWidth);
    const auto at_row = [&](size_t i) {
      return reinterpret_cast<const UnalignedFloat*>(base + i * kWidth * sizeof(float));
    };
    CHECK(rows.Row(1) == at_row(1));
    CHECK(rows.Row(4) == at_row(4));
    for (size_t i = 0; i < kRows; ++i) {
      CHECK(std::memcmp(rows.Row(i), values.data() + i * kWidth, kWidth * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("CheckFinite over pieces finds a value cut in two and names it as over the joined",
          "[shard][finite]") {
  v1::TableSpec spec;
  spec.set_name("emb");
  spec.set_non_finite(v1::NON_FINITE_POLICY_REJECT);
  const std::string keys = KeysToBytes({11, 12, 13});
  std::vector<float> values(3 * 4, 0.5f);
  for (size_t cut : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{16}, size_t{48}}) {
    CAPTURE(cut);
    std::string held;
    CHECK(CheckFinite(spec, keys, Cut(Bytes(values), cut, &held), 4).ok());
    for (size_t bad = 0; bad < values.size(); ++bad) {
      CAPTURE(bad);
      std::vector<float> v = values;
      v[bad] = bad % 2 == 0 ? std::nanf("") : -std::numeric_limits<float>::infinity();
      const absl::Status in_pieces = CheckFinite(spec, keys, Cut(Bytes(v), cut, &held), 4);
      const absl::Status joined = CheckFinite(spec, keys, Bytes(v), 4);
      REQUIRE(absl::IsInvalidArgument(in_pieces));
      CHECK(in_pieces == joined);
    }
  }
  spec.set_non_finite(v1::NON_FINITE_POLICY_ALLOW);
  std::vector<float> v = values;
  v[5] = std::nanf("");
  std::string held;
  CHECK(CheckFinite(spec, keys, Cut(Bytes(v), 3, &held), 4).ok());
}

// Tables of the shard below: a sparse Adam table of width 4, a dense SGD
// table of 10 floats in chunks of 4, both ASP.
v1::JobSpec PiecesJob() {
  v1::TableSpec sparse = testing::SparseAdam();
  sparse.set_consistency(v1::CONSISTENCY_ASP);
  v1::TableSpec dense = ScalarTable("d", v1::CONSISTENCY_ASP);
  dense.set_shape(0, 10);
  dense.set_chunk_size(4);
  return Job({sparse, dense});
}

// A push of `keys` to the sparse table (and, with `dense`, of every chunk of
// the dense one), each gradient value from `scale`.
v1::PushRequest PiecesPush(uint64_t seq, const std::vector<Key>& keys, float scale, bool dense,
                           v1::DType dtype = v1::DTYPE_FLOAT32) {
  v1::PushRequest r;
  r.set_map_version(1);
  r.set_worker_id(0);
  r.set_incarnation(1);
  r.set_sequence(seq);
  v1::TableValues* tv = r.add_tables();
  tv->set_table_id(0);
  tv->set_table("E");
  tv->set_keys(KeysToBytes(keys));
  tv->add_shape(static_cast<int64_t>(keys.size()));
  tv->add_shape(4);
  std::vector<float> g(keys.size() * 4);
  for (size_t i = 0; i < g.size(); ++i) g[i] = scale * (static_cast<float>(i % 9) - 4.0f);
  tv->set_dtype(dtype);
  tv->mutable_values()->resize(g.size() * WireBytes(dtype));
  EncodeValues(g.data(), g.size(), dtype, tv->mutable_values()->data());
  if (dense) {
    v1::TableValues* d = r.add_tables();
    d->set_table_id(1);
    d->set_table("d");
    d->set_keys(KeysToBytes({0, 1, 2}));
    d->add_shape(10);
    std::vector<float> dg(10);
    for (size_t i = 0; i < dg.size(); ++i) dg[i] = scale * static_cast<float>(i + 1);
    d->set_values(Bytes(dg));
    d->set_dtype(v1::DTYPE_FLOAT32);
  }
  return r;
}

std::string State(const Shard& shard) {
  absl::StatusOr<ShardSnapshot> snap = shard.Snapshot();
  REQUIRE(snap.ok());
  std::string out;
  for (const ShardSnapshot::Partition& p : snap->partitions) {
    for (float v : p.rows.values) out.append(reinterpret_cast<const char*>(&v), sizeof(v));
    for (float v : p.rows.slots) out.append(reinterpret_cast<const char*>(&v), sizeof(v));
    for (int64_t s : p.rows.steps) out.append(reinterpret_cast<const char*>(&s), sizeof(s));
    for (Key k : p.rows.keys) out.append(reinterpret_cast<const char*>(&k), sizeof(k));
  }
  return out;
}

// Pushes `request` to `whole` as it is and to `pieces` with its values cut
// into pieces of `cut` bytes at odd addresses: the same result, the same
// state after.
void PushBoth(Shard& whole, Shard& pieces, const v1::PushRequest& request, size_t cut) {
  std::vector<std::string> held(request.tables_size());
  std::vector<ValuePieces> values;
  v1::PushRequest bare = request;
  for (int i = 0; i < request.tables_size(); ++i) {
    values.push_back(Cut(request.tables(i).values(), cut, &held[i]));
    bare.mutable_tables(i)->clear_values();
  }
  const absl::StatusOr<bool> a = whole.Push(request);
  const absl::StatusOr<bool> b = pieces.Push(bare, values);
  CHECK(a.status() == b.status());
  if (a.ok() && b.ok()) CHECK(*a == *b);
  CHECK(State(whole) == State(pieces));
}

TEST_CASE("A push applied from received pieces leaves the bits of one applied from its message",
          "[shard]") {
  for (size_t cut : {size_t{3}, size_t{17}, size_t{64}}) {
    CAPTURE(cut);
    Shard whole(0, PiecesJob(), nullptr);
    Shard pieces(0, PiecesJob(), nullptr);
    REQUIRE(whole.InstallMap(Map(4, {0})).ok());
    REQUIRE(pieces.InstallMap(Map(4, {0})).ok());
    uint64_t seq = 0;
    // Keys ascending (ApplyUnique), with the dense table (joined first).
    PushBoth(whole, pieces, PiecesPush(++seq, {3, 9, 40, 41, 77}, 0.01f, true), cut);
    // Keys in any order (ApplyIfDistinct), new rows among known ones.
    PushBoth(whole, pieces, PiecesPush(++seq, {41, 5, 77, 3, 12, 90}, 0.02f, false), cut);
    // A key repeated: summed first (B07).
    PushBoth(whole, pieces, PiecesPush(++seq, {9, 41, 9, 6}, -0.03f, true), cut);
    // Bfloat16 values (widened from the joined pieces).
    PushBoth(whole, pieces, PiecesPush(++seq, {12, 3, 100}, 0.5f, false, v1::DTYPE_BFLOAT16),
             cut);
    // Already applied: a duplicate both ways.
    PushBoth(whole, pieces, PiecesPush(seq, {12, 3, 100}, 0.5f, false, v1::DTYPE_BFLOAT16), cut);
    // A NaN (cut in two when the pieces are 3 bytes): refused whole, named
    // the same, nothing changed.
    v1::PushRequest bad = PiecesPush(++seq, {77, 2, 40}, 0.04f, true);
    const float nan = std::nanf("");
    std::memcpy(bad.mutable_tables(0)->mutable_values()->data() + 7 * sizeof(float), &nan,
                sizeof(nan));
    const std::string before = State(pieces);
    PushBoth(whole, pieces, bad, cut);
    CHECK(State(pieces) == before);
    // A length that is not the keys' rows: refused the same way.
    v1::PushRequest short_values = PiecesPush(++seq, {8, 9}, 0.1f, false);
    short_values.mutable_tables(0)->mutable_values()->resize(7 * sizeof(float));
    PushBoth(whole, pieces, short_values, cut);
  }
}

}  // namespace
}  // namespace cairn
