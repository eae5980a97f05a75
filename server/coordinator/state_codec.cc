#include "server/coordinator/state_codec.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "server/checkpoint/checkpoint_codec.h"

namespace cairn {
namespace {

template <typename T>
void PutFixed(T v, std::string* out) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out->append(bytes, sizeof(T));
}

void PutString(const std::string& s, std::string* out) {
  PutFixed<uint32_t>(static_cast<uint32_t>(s.size()), out);
  out->append(s);
}

// Reads fixed-width values and strings off a buffer; any read past its end
// sets ok = false and yields zeros.
class Reader {
 public:
  explicit Reader(const std::string& data) : data_(data) {}

  template <typename T>
  T Fixed() {
    T v{};
    if (!ok_ || data_.size() - pos_ < sizeof(T)) {
      ok_ = false;
      return v;
    }
    std::memcpy(&v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string String() {
    const uint32_t size = Fixed<uint32_t>();
    if (!ok_ || data_.size() - pos_ < size) {
      ok_ = false;
      return {};
    }
    std::string s = data_.substr(pos_, size);
    pos_ += size;
    return s;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == data_.size(); }

 private:
  const std::string& data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace

std::string EncodeState(const PersistedState& state) {
  std::string body;
  PutFixed<uint32_t>(kStateFormatVersion, &body);
  PutString(state.job.SerializeAsString(), &body);
  PutString(state.map.SerializeAsString(), &body);
  PutFixed<uint32_t>(static_cast<uint32_t>(state.members.size()), &body);
  for (const MemberRecord& m : state.members) {
    PutFixed<uint8_t>(static_cast<uint8_t>(m.role), &body);
    PutFixed<uint8_t>(static_cast<uint8_t>(m.state), &body);
    PutFixed<uint32_t>(m.id, &body);
    PutFixed<int32_t>(m.incarnation, &body);
    PutFixed<int64_t>(m.clock, &body);
    PutFixed<int64_t>(m.start_clock, &body);
    PutString(m.address, &body);
    PutString(m.metrics_address, &body);
  }
  std::string value;
  PutFixed<uint64_t>(checkpoint::Checksum(body), &value);
  return value + body;
}

absl::StatusOr<PersistedState> DecodeState(const std::string& value, const std::string& what) {
  uint64_t sum = 0;
  if (value.size() < sizeof(sum) + sizeof(uint32_t)) {
    return absl::DataLossError(absl::StrCat(what, ": coordinator state too short (",
                                            value.size(), " bytes)"));
  }
  std::memcpy(&sum, value.data(), sizeof(sum));
  const std::string body = value.substr(sizeof(sum));
  if (checkpoint::Checksum(body) != sum) {
    return absl::DataLossError(absl::StrCat(what, ": coordinator state fails its checksum"));
  }
  Reader in(body);
  const uint32_t version = in.Fixed<uint32_t>();
  if (version != kStateFormatVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": coordinator state has format version ", version, "; this build reads version ",
        kStateFormatVersion));
  }
  PersistedState state;
  const bool job_ok = state.job.ParseFromString(in.String());
  const bool map_ok = state.map.ParseFromString(in.String());
  const uint32_t count = in.Fixed<uint32_t>();
  for (uint32_t i = 0; i < count && in.ok(); ++i) {
    MemberRecord m;
    m.role = static_cast<v1::MemberRole>(in.Fixed<uint8_t>());
    m.state = static_cast<v1::MemberState>(in.Fixed<uint8_t>());
    m.id = in.Fixed<uint32_t>();
    m.incarnation = in.Fixed<int32_t>();
    m.clock = in.Fixed<int64_t>();
    m.start_clock = in.Fixed<int64_t>();
    m.address = in.String();
    m.metrics_address = in.String();
    state.members.push_back(std::move(m));
  }
  if (!in.ok() || !in.at_end() || !job_ok || !map_ok) {
    return absl::DataLossError(absl::StrCat(what, ": coordinator state does not parse"));
  }
  return state;
}

}  // namespace cairn
