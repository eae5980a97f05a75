#include "server/shard/rpc/shared_regions.h"

#include <sys/random.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace cairn {

SharedRegions::SharedRegions() {
  // Ids of a restarted server's regions differ from the last process's: a
  // worker still naming an old region gets "unknown", not someone else's.
  uint32_t base = 0;
  if (getrandom(&base, sizeof(base), 0) != sizeof(base)) base = 1;
  absl::MutexLock lock(&mu_);
  next_id_ = (static_cast<uint64_t>(base) << 32) | 1;
}

absl::StatusOr<uint64_t> SharedRegions::Open(const v1::OpenRegionRequest& offer) {
  absl::StatusOr<std::unique_ptr<SharedRegion>> region =
      SharedRegion::Open(offer.pid(), offer.fd(), offer.bytes(), offer.token());
  if (!region.ok()) return region.status();
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  WorkerRegions& held = by_worker_[offer.worker_id()];
  if (held.incarnation != offer.incarnation()) {
    // Another life of the worker id (its registration decides which one
    // may push): the latest to offer holds the id's regions.
    for (uint64_t old : held.ids) regions_.erase(old);
    held = WorkerRegions{offer.incarnation(), {}};
  }
  held.ids.push_back(id);
  if (held.ids.size() > kMaxRegionsPerWorker) {
    regions_.erase(held.ids.front());
    held.ids.erase(held.ids.begin());
  }
  regions_[id] = Held{std::shared_ptr<SharedRegion>(std::move(*region)), offer.worker_id()};
  return id;
}

bool SharedRegions::UsesRegion(const v1::PushRequest& request) {
  for (const v1::TableValues& t : request.tables()) {
    if (t.has_shared()) return true;
  }
  return false;
}

absl::StatusOr<std::shared_ptr<SharedRegion>> SharedRegions::Find(uint64_t id,
                                                                  uint32_t worker_id) const {
  absl::MutexLock lock(&mu_);
  auto it = regions_.find(id);
  if (it == regions_.end()) {
    return absl::UnavailableError(absl::StrCat(
        "shared region ", id, " is unknown to this server (it restarted, or the worker offered "
        "a newer one): refresh the map and connect again"));
  }
  if (it->second.worker_id != worker_id) {
    return absl::InvalidArgumentError(absl::StrCat("shared region ", id, " belongs to worker ",
                                                   it->second.worker_id, ", not to worker ",
                                                   worker_id));
  }
  return it->second.region;
}

absl::StatusOr<SharedRegions::PushValues> SharedRegions::ResolvePush(
    const v1::PushRequest& request, absl::Span<const ValuePieces> received) const {
  PushValues out;
  out.values.reserve(request.tables_size());
  uint64_t region_id = 0;
  for (int i = 0; i < request.tables_size(); ++i) {
    const v1::TableValues& t = request.tables(i);
    if (!t.has_shared()) {
      out.values.push_back(static_cast<size_t>(i) < received.size() ? received[i]
                                                                    : OnePiece(t.values()));
      continue;
    }
    const v1::SharedRange& r = t.shared();
    if (out.region == nullptr || r.region() != region_id) {
      absl::StatusOr<std::shared_ptr<SharedRegion>> found = Find(r.region(), request.worker_id());
      if (!found.ok()) return found.status();
      out.region = *std::move(found);
      region_id = r.region();
    }
    absl::StatusOr<absl::Span<char>> bytes = out.region->Range(r.offset(), r.length());
    if (!bytes.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("push to table \"", t.table(), "\": ", bytes.status().message()));
    }
    out.values.push_back(ValuePieces{absl::Span<const char>(bytes->data(), bytes->size())});
  }
  if (request.has_written()) RETURN_IF_ERROR(ResolveWritten(request, &out));
  return out;
}

absl::Status SharedRegions::ResolveWritten(const v1::PushRequest& request, PushValues* out) {
  const v1::SharedRange& w = request.written();
  auto refuse = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("streamed push (written: region ", w.region(),
                                                   " offset ", w.offset(), "): ", why));
  };
  const char* next = nullptr;
  for (int i = 0; i < request.tables_size(); ++i) {
    if (!request.tables(i).has_shared() || request.tables(i).shared().region() != w.region()) {
      return refuse(absl::StrCat("table \"", request.tables(i).table(),
                                 "\" has no values in that region"));
    }
    const absl::Span<const char> v = out->values[i].front();  // one range of the region
    if (next != nullptr && v.data() != next) {
      return refuse(absl::StrCat("table \"", request.tables(i).table(),
                                 "\"'s values do not follow the previous table's"));
    }
    if (out->begin == nullptr) out->begin = v.data();
    next = v.data() + v.size();
  }
  if (out->begin == nullptr) return refuse("no table");
  if (w.length() != sizeof(uint64_t)) return refuse("the count is not 8 bytes");
  absl::StatusOr<absl::Span<char>> word = out->region->Range(w.offset(), w.length());
  if (!word.ok()) return refuse(word.status().message());
  if (reinterpret_cast<uintptr_t>(word->data()) % alignof(std::atomic<uint64_t>) != 0) {
    return refuse("the count is not 8-byte aligned");
  }
  if (word->data() < next && word->data() + sizeof(uint64_t) > out->begin) {
    return refuse("the count overlaps the values");
  }
  out->end = next;
  out->written = reinterpret_cast<const std::atomic<uint64_t>*>(word->data());
  return absl::OkStatus();
}

std::optional<SharedRegions::Reply> SharedRegions::ResolveReply(
    const v1::PullRequest& request) const {
  if (!request.has_reply_to()) return std::nullopt;
  const v1::SharedRange& to = request.reply_to();
  absl::StatusOr<std::shared_ptr<SharedRegion>> region = Find(to.region(), request.worker_id());
  if (!region.ok()) return std::nullopt;
  absl::StatusOr<absl::Span<char>> range = (*region)->Range(to.offset(), to.length());
  if (!range.ok()) return std::nullopt;
  return Reply{*std::move(region), *range};
}

size_t SharedRegions::size() const {
  absl::MutexLock lock(&mu_);
  return regions_.size();
}

}  // namespace cairn
