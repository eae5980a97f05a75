// Little-endian fixed-width encoding for checkpoint values (checkpoint_format.h).
#ifndef CAIRN_SERVER_CHECKPOINT_INTERNAL_CODING_H_
#define CAIRN_SERVER_CHECKPOINT_INTERNAL_CODING_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace cairn::checkpoint::internal {

// Appends values to a string. Not thread-safe.
class Encoder {
 public:
  template <typename T>
  void Put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  template <typename T>
  void PutArray(const std::vector<T>& v) {
    out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void PutString(std::string_view s) {
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_.append(s.data(), s.size());
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

// Reads values back; after the first short read every Get fails and ok()
// stays false. Not thread-safe.
class Decoder {
 public:
  explicit Decoder(std::string_view in) : in_(in) {}
  template <typename T>
  bool Get(T* v) {
    if (!ok_ || in_.size() < sizeof(T)) return ok_ = false;
    std::memcpy(v, in_.data(), sizeof(T));
    in_.remove_prefix(sizeof(T));
    return true;
  }
  template <typename T>
  bool GetArray(uint64_t n, std::vector<T>* v) {
    if (!ok_ || n > in_.size() / sizeof(T)) return ok_ = false;
    v->resize(n);
    // An empty vector's data() may be null, and memcpy's pointers must not
    // be, even for 0 bytes.
    if (n > 0) std::memcpy(v->data(), in_.data(), n * sizeof(T));
    in_.remove_prefix(n * sizeof(T));
    return true;
  }
  bool GetString(std::string* s) {
    uint32_t n = 0;
    if (!Get(&n) || in_.size() < n) return ok_ = false;
    s->assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  bool ok() const { return ok_; }
  bool done() const { return ok_ && in_.empty(); }

 private:
  std::string_view in_;
  bool ok_ = true;
};

}  // namespace cairn::checkpoint::internal

#endif  // CAIRN_SERVER_CHECKPOINT_INTERNAL_CODING_H_
