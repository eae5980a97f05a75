#include "common/received_tables.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/message_lite.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"

namespace cairn {
namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;
using google::protobuf::io::StringOutputStream;

// Protobuf's wire types (encoding guide, "Message Structure").
constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kLengthDelimited = 2;
constexpr uint32_t kFixed32 = 5;

constexpr uint32_t Tag(int field, uint32_t wire_type) {
  return (static_cast<uint32_t>(field) << 3) | wire_type;
}

absl::Status Malformed(const ReceivedTables::Refusal& refusal, absl::string_view what,
                       const CodedInputStream& in) {
  return absl::Status(refusal.code, absl::StrCat(refusal.what, " is malformed: ", what,
                                                 " at byte ", in.CurrentPosition()));
}

// The next tag, 0 at the end of the message or its limit. A tag is at most
// five bytes (protobuf refuses longer ones; CodedInputStream would cut them
// to 32 bits): false for a longer one.
bool NextTag(CodedInputStream* in, uint32_t* tag) {
  const int before = in->CurrentPosition();
  *tag = in->ReadTag();
  return in->CurrentPosition() - before <= 5;
}

// A length of a length-delimited field: like protobuf, at most five bytes
// and below 2^31.
bool ReadLength(CodedInputStream* in, uint32_t* length) {
  const int before = in->CurrentPosition();
  uint64_t v;
  if (!in->ReadVarint64(&v) || in->CurrentPosition() - before > 5 ||
      v > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    return false;
  }
  *length = static_cast<uint32_t>(v);
  return true;
}

// Reads the field whose tag was just read and writes it, tag and all, to
// `out`: the fields other than values, for protobuf to parse afterwards.
bool CopyField(CodedInputStream* in, uint32_t tag, CodedOutputStream* out) {
  out->WriteTag(tag);
  switch (tag & 7) {
    case kVarint: {
      uint64_t v;
      if (!in->ReadVarint64(&v)) return false;
      out->WriteVarint64(v);
      return true;
    }
    case kFixed64: {
      uint64_t v;
      if (!in->ReadLittleEndian64(&v)) return false;
      out->WriteLittleEndian64(v);
      return true;
    }
    case kFixed32: {
      uint32_t v;
      if (!in->ReadLittleEndian32(&v)) return false;
      out->WriteLittleEndian32(v);
      return true;
    }
    case kLengthDelimited: {
      uint32_t length;
      std::string bytes;
      if (!ReadLength(in, &length) || !in->ReadString(&bytes, static_cast<int>(length))) {
        return false;
      }
      out->WriteVarint32(length);
      out->WriteString(bytes);
      return true;
    }
    default:  // groups: not in cairn.v1
      return false;
  }
}

// Takes the next `length` bytes as spans of the stream's buffers.
bool TakePieces(CodedInputStream* in, uint32_t length, ValuePieces* pieces) {
  while (length > 0) {
    const void* data;
    int size;
    if (!in->GetDirectBufferPointer(&data, &size) || size <= 0) return false;
    const uint32_t take = std::min(length, static_cast<uint32_t>(size));
    pieces->emplace_back(static_cast<const char*>(data), take);
    if (!in->Skip(static_cast<int>(take))) return false;
    length -= take;
  }
  return true;
}

// Takes the next `length` bytes into `out`, replacing what it held.
bool ReadBytes(CodedInputStream* in, std::string* out) {
  uint32_t length;
  return ReadLength(in, &length) && in->ReadString(out, static_cast<int>(length));
}

// One TableValues, within a limit the caller pushed: its keys read straight
// into `table`, its values left as pieces, the rest parsed by protobuf.
absl::Status ReadTable(CodedInputStream* in, v1::TableValues* table, ValuePieces* pieces,
                       const ReceivedTables::Refusal& refusal) {
  std::string rest;
  {
    StringOutputStream stream(&rest);
    CodedOutputStream out(&stream);
    uint32_t tag;
    while (true) {
      if (!NextTag(in, &tag)) return Malformed(refusal, "a table's tag longer than 5 bytes", *in);
      if (tag == 0) break;
      if (tag == Tag(v1::TableValues::kValuesFieldNumber, kLengthDelimited)) {
        pieces->clear();  // a field given twice: the last one counts, as in protobuf
        uint32_t length;
        if (!ReadLength(in, &length) || !TakePieces(in, length, pieces)) {
          return Malformed(refusal, "a table's values end early", *in);
        }
      } else if (tag == Tag(v1::TableValues::kKeysFieldNumber, kLengthDelimited)) {
        if (!ReadBytes(in, table->mutable_keys())) {
          return Malformed(refusal, "a table's keys end early", *in);
        }
      } else if (!CopyField(in, tag, &out)) {
        return Malformed(refusal, absl::StrCat("field ", tag >> 3, " of a table"), *in);
      }
    }
    if (!in->ConsumedEntireMessage()) return Malformed(refusal, "a table's tag", *in);
  }
  if (!rest.empty() && !table->MergeFromString(rest)) {
    return absl::Status(refusal.code,
                        absl::StrCat(refusal.what, " has a table protobuf cannot parse"));
  }
  return absl::OkStatus();
}

}  // namespace

ReceivedTables::ReceivedTables() : bytes_(std::make_unique<grpc::ByteBuffer>()) {}
ReceivedTables::~ReceivedTables() = default;

absl::Status ReceivedTables::Read(google::protobuf::MessageLite* message, uint32_t tables_field,
                                  absl::FunctionRef<v1::TableValues*()> add_table,
                                  const Refusal& refusal) {
  message->Clear();
  values_.clear();
  reader_ = std::make_unique<grpc::ProtoBufferReader>(bytes_.get());
  if (!reader_->status().ok()) {
    return absl::Status(refusal.code, absl::StrCat("cannot read ", refusal.what, ": ",
                                                   reader_->status().error_message()));
  }
  CodedInputStream in(reader_.get());
  std::string rest;  // every field but the tables
  {
    StringOutputStream stream(&rest);
    CodedOutputStream out(&stream);
    uint32_t tag;
    while (true) {
      if (!NextTag(&in, &tag)) return Malformed(refusal, "a tag longer than 5 bytes", in);
      if (tag == 0) break;
      if (tag == Tag(tables_field, kLengthDelimited)) {
        uint32_t length;
        if (!ReadLength(&in, &length)) return Malformed(refusal, "a table's length", in);
        const CodedInputStream::Limit limit = in.PushLimit(static_cast<int>(length));
        if (absl::Status s = ReadTable(&in, add_table(), &values_.emplace_back(), refusal);
            !s.ok()) {
          return s;
        }
        if (in.BytesUntilLimit() != 0) return Malformed(refusal, "a table ends early", in);
        in.PopLimit(limit);
      } else if (!CopyField(&in, tag, &out)) {
        return Malformed(refusal, absl::StrCat("field ", tag >> 3), in);
      }
    }
    if (!in.ConsumedEntireMessage()) return Malformed(refusal, "a tag", in);
  }
  if (!rest.empty() && !message->MergeFromString(rest)) {
    return absl::Status(refusal.code,
                        absl::StrCat(refusal.what, " has a field protobuf cannot parse"));
  }
  return absl::OkStatus();
}

}  // namespace cairn
