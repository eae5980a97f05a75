#include "tools/launch/launch_plan.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace cairn::launch {
namespace {

constexpr char kLoopback[] = "127.0.0.1";

void AppendOverrides(const LaunchPlan& plan, std::vector<std::string>* args) {
  for (const std::string& assignment : plan.overrides) {
    args->push_back("--set");
    args->push_back(assignment);
  }
}

std::string CoordinatorAddress(int port) { return absl::StrCat(kLoopback, ":", port); }

}  // namespace

absl::StatusOr<std::string> OwnBinaryDir() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot resolve /proc/self/exe: ", error.message(), "; pass --bin-dir"));
  }
  return self.parent_path().string();
}

absl::StatusOr<std::string> FindBinary(const std::string& dir, const std::string& name) {
  const std::string path = (std::filesystem::path(dir) / name).string();
  struct stat info;
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) ||
      ::access(path.c_str(), X_OK) != 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot find the executable ", name, " at ", path,
                     " (build it, or pass --bin-dir with the directory that holds it)"));
  }
  return path;
}

absl::StatusOr<std::string> PrepareWorkdir(const std::string& requested, bool* created_temp) {
  *created_temp = false;
  if (requested.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp",
                                   "/cairn-launch.XXXXXX");
    if (::mkdtemp(dir.data()) == nullptr) {
      return absl::InternalError(absl::StrCat("cannot create a work directory ", dir, ": ",
                                              std::strerror(errno), " (pass --workdir)"));
    }
    *created_temp = true;
    return dir;
  }
  std::error_code error;
  std::filesystem::create_directories(requested, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot create the work directory ", requested, ": ", error.message()));
  }
  return std::filesystem::absolute(requested).string();
}

std::string CoordinatorPortFile(const LaunchPlan& plan) {
  return (std::filesystem::path(plan.workdir) / "coordinator.ports").string();
}

std::string ServerPortFile(const LaunchPlan& plan, int index) {
  return (std::filesystem::path(plan.workdir) / absl::StrCat("server-", index, ".ports")).string();
}

std::string WorkerSummaryFile(const LaunchPlan& plan, int index) {
  return (std::filesystem::path(plan.workdir) / absl::StrCat("worker-", index, ".json")).string();
}

std::vector<std::string> CoordinatorArgs(const LaunchPlan& plan) {
  std::vector<std::string> args = {"--config",    plan.job_path,
                                   "--listen",    CoordinatorAddress(plan.coordinator_port),
                                   "--port-file", CoordinatorPortFile(plan),
                                   "--metrics-port", "0"};
  AppendOverrides(plan, &args);
  args.insert(args.end(), plan.daemon_flags.begin(), plan.daemon_flags.end());
  return args;
}

std::vector<std::string> ServerArgs(const LaunchPlan& plan, int index, int coordinator_port) {
  std::vector<std::string> args = {"--config",       plan.job_path,
                                   "--coordinator",  CoordinatorAddress(coordinator_port),
                                   "--listen",       absl::StrCat(kLoopback, ":0"),
                                   "--port-file",    ServerPortFile(plan, index),
                                   "--metrics-port", "0",
                                   "--server-id",    absl::StrCat(index)};
  AppendOverrides(plan, &args);
  args.insert(args.end(), plan.daemon_flags.begin(), plan.daemon_flags.end());
  return args;
}

std::vector<std::string> WorkerArgs(const LaunchPlan& plan, int index, int coordinator_port) {
  std::vector<std::string> args = {"--config",       plan.job_path,
                                   "--coordinator",  CoordinatorAddress(coordinator_port),
                                   "--worker-id",    absl::StrCat(index),
                                   "--summary",      WorkerSummaryFile(plan, index),
                                   "--metrics-port", "0"};
  AppendOverrides(plan, &args);
  args.insert(args.end(), plan.daemon_flags.begin(), plan.daemon_flags.end());
  args.insert(args.end(), plan.worker_flags.begin(), plan.worker_flags.end());
  return args;
}

}  // namespace cairn::launch
