#include "tools/launch/job_certificates.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/spawn.h"

namespace cairn::launch {

absl::StatusOr<std::vector<std::string>> MakeJobCertificates(const std::string& bin_dir,
                                                             const std::string& workdir) {
  const std::string script = bin_dir + "/cairn-certs";
  const std::string dir = workdir + "/certs";
  const std::string log = workdir + "/cairn-certs.log";
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("cannot create ", log));
  absl::StatusOr<pid_t> pid = SpawnChild(script, {dir}, ChildStdio{-1, fd, fd});
  close(fd);
  if (!pid.ok()) return pid.status();
  int status = 0;
  while (waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::ifstream in(log);
    std::ostringstream text;
    text << in.rdbuf();
    return absl::InternalError(absl::StrCat(script, " failed: ", text.str()));
  }
  return std::vector<std::string>{"--tls",
                                  "--tls-ca",
                                  dir + "/ca.pem",
                                  "--tls-cert",
                                  dir + "/{role}.pem",
                                  "--tls-key",
                                  dir + "/{role}.key",
                                  "--tls-tokens",
                                  dir + "/tokens"};
}

}  // namespace cairn::launch
