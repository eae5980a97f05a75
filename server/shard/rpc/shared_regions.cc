#include "server/shard/rpc/shared_regions.h"

#include <sys/random.h>

#include <cstring>

#include "absl/strings/str_cat.h"

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
  auto old = by_worker_.find(offer.worker_id());
  if (old != by_worker_.end()) regions_.erase(old->second);
  by_worker_[offer.worker_id()] = id;
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

absl::StatusOr<std::shared_ptr<v1::PushRequest>> SharedRegions::ReadPush(
    const v1::PushRequest& request) const {
  auto out = std::make_shared<v1::PushRequest>(request);
  std::shared_ptr<SharedRegion> region;
  uint64_t region_id = 0;
  for (v1::TableValues& t : *out->mutable_tables()) {
    if (!t.has_shared()) continue;
    const v1::SharedRange& r = t.shared();
    if (region == nullptr || r.region() != region_id) {
      region_id = r.region();
      absl::StatusOr<std::shared_ptr<SharedRegion>> found = Find(r.region(), request.worker_id());
      if (!found.ok()) return found.status();
      region = *std::move(found);
    }
    absl::StatusOr<absl::Span<char>> bytes = region->Range(r.offset(), r.length());
    if (!bytes.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("push to table \"", t.table(), "\": ", bytes.status().message()));
    }
    t.mutable_values()->assign(bytes->data(), bytes->size());
    t.clear_shared();
  }
  return out;
}

void SharedRegions::WritePull(const v1::PullRequest& request, v1::PullResponse* response) const {
  if (!request.has_reply_to()) return;
  const v1::SharedRange& to = request.reply_to();
  uint64_t bytes = 0;
  for (const v1::TableValues& t : response->tables()) bytes += t.values().size();
  if (bytes == 0 || bytes > to.length()) return;
  absl::StatusOr<std::shared_ptr<SharedRegion>> region = Find(to.region(), request.worker_id());
  if (!region.ok()) return;
  absl::StatusOr<absl::Span<char>> range = (*region)->Range(to.offset(), to.length());
  if (!range.ok()) return;
  uint64_t offset = to.offset();
  char* out = range->data();
  for (v1::TableValues& t : *response->mutable_tables()) {
    const uint64_t n = t.values().size();
    std::memcpy(out, t.values().data(), n);
    v1::SharedRange* shared = t.mutable_shared();
    shared->set_region(to.region());
    shared->set_offset(offset);
    shared->set_length(n);
    t.clear_values();
    out += n;
    offset += n;
  }
}

size_t SharedRegions::size() const {
  absl::MutexLock lock(&mu_);
  return regions_.size();
}

}  // namespace cairn
