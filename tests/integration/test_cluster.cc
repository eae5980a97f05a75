#include "tests/integration/test_cluster.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace cairn::testing {

absl::StatusOr<std::unique_ptr<TestCluster>> TestCluster::Start(const std::string& name,
                                                                const std::string& yaml,
                                                                int num_servers) {
  auto cluster = std::make_unique<TestCluster>();
  ASSIGN_OR_RETURN(cluster->dir_, MakeTempDir(name));
  cluster->config_ = cluster->dir_ + "/job.yaml";
  RETURN_IF_ERROR(WriteFile(cluster->config_, yaml));
  ASSIGN_OR_RETURN(cluster->coordinator_,
                   Subprocess::Spawn(CAIRN_BINARY_DIR "/bin/cairn-coordinator",
                                     {"--config", cluster->config_, "--listen", "127.0.0.1:0",
                                      "--port-file", cluster->dir_ + "/coordinator.ports"},
                                     cluster->dir_ + "/coordinator"));
  ASSIGN_OR_RETURN(auto ports, ReadPortFile(cluster->dir_ + "/coordinator.ports",
                                            absl::Seconds(30), cluster->coordinator_.get()));
  cluster->coordinator_address_ = absl::StrCat("127.0.0.1:", ports["grpc"]);
  for (int i = 0; i < num_servers; ++i) RETURN_IF_ERROR(cluster->StartServer());
  return cluster;
}

absl::Status TestCluster::StartServer() {
  const int i = static_cast<int>(servers_.size());
  const std::string port_file = absl::StrCat(dir_, "/server", i, ".ports");
  ASSIGN_OR_RETURN(auto server,
                   Subprocess::Spawn(CAIRN_BINARY_DIR "/bin/cairn-server",
                                     {"--config", config_, "--coordinator", coordinator_address_,
                                      "--listen", "127.0.0.1:0", "--port-file", port_file},
                                     absl::StrCat(dir_, "/server", i)));
  servers_.push_back(std::move(server));
  return ReadPortFile(port_file, absl::Seconds(30), servers_.back().get()).status();
}

std::string TestCluster::Logs() const {
  auto tail = [](const std::string& s) {
    return s.size() > 3000 ? s.substr(s.size() - 3000) : s;
  };
  std::string out = absl::StrCat("--- coordinator stderr:\n", tail(coordinator_->ReadStderr()));
  for (size_t i = 0; i < servers_.size(); ++i) {
    absl::StrAppend(&out, "\n--- server ", i, " stderr:\n", tail(servers_[i]->ReadStderr()));
  }
  return out;
}

}  // namespace cairn::testing
