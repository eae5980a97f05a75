// cairn: one entry point for every role, so a scheduler needs one command
// per template: `cairn <role> [flags]`, or `cairn [flags]` with CAIRN_ROLE
// set (docs/deploy.md). Runs cairn-coordinator, cairn-server or cairn-worker
// from the folder this binary is in, with the remaining arguments; the
// process keeps its pid, so signals and the exit code are the role's own.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

constexpr const char* kRoles[] = {"coordinator", "server", "worker"};

bool IsRole(const std::string& word) {
  for (const char* role : kRoles) {
    if (word == role) return true;
  }
  return false;
}

// The folder of this executable, from /proc/self/exe.
std::string OwnFolder() {
  std::vector<char> buffer(4096);
  const ssize_t n = ::readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  if (n <= 0) return ".";
  std::string path(buffer.data(), static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

int Usage(const std::string& problem) {
  std::cerr << "cairn: " << problem
            << "\nusage: cairn coordinator|server|worker [flags...]\n"
               "       CAIRN_ROLE=coordinator|server|worker cairn [flags...]\n"
               "Each role's flags: cairn <role> --help. docs/deploy.md describes the "
               "environment (CAIRN_COORDINATOR, CAIRN_INDEX, CAIRN_ADVERTISE_HOST).\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string role;
  int first_arg = 1;
  if (argc > 1 && IsRole(argv[1])) {
    role = argv[1];
    first_arg = 2;
  } else if (const char* env = std::getenv("CAIRN_ROLE"); env != nullptr && *env != '\0') {
    role = env;
    if (!IsRole(role)) {
      return Usage("CAIRN_ROLE=\"" + role + "\" is not a role (coordinator, server, worker)");
    }
  } else if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    Usage("runs one role of a Cairn job");
    return 0;
  } else {
    return Usage(argc > 1 ? "\"" + std::string(argv[1]) + "\" is not a role, and CAIRN_ROLE is unset"
                          : "no role given, and CAIRN_ROLE is unset");
  }
  const std::string binary = OwnFolder() + "/cairn-" + role;
  std::vector<char*> args;
  args.push_back(const_cast<char*>(binary.c_str()));
  for (int i = first_arg; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execv(binary.c_str(), args.data());
  std::cerr << "cairn: cannot run " << binary << ": " << std::strerror(errno) << "\n";
  return 1;
}
