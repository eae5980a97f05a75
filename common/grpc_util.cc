#include "common/grpc_util.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/net.h"
#include "common/security/transport_security.h"

namespace cairn {
namespace {

// Whether another socket holds `address`'s port: a bind as gRPC's (with
// SO_REUSEADDR) fails with EADDRINUSE. Asked first, so a taken port is one
// clear line instead of gRPC's own log of its failed bind. Anything else
// (a name that does not resolve, a port of 0) is left to gRPC.
bool PortTaken(const std::string& address) {
  absl::StatusOr<HostPort> hp = ParseHostPort(address, "address", /*allow_zero_port=*/true);
  if (!hp.ok() || hp->port == 0) return false;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string port = absl::StrCat(hp->port);
  if (getaddrinfo(hp->host.empty() ? nullptr : hp->host.c_str(), port.c_str(), &hints,
                  &found) != 0) {
    return false;
  }
  bool taken = false;
  for (addrinfo* a = found; a != nullptr && !taken; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    taken = bind(fd, a->ai_addr, a->ai_addrlen) != 0 && errno == EADDRINUSE;
    close(fd);
  }
  freeaddrinfo(found);
  return taken;
}

}  // namespace

absl::StatusOr<StartedServer> StartGrpcServer(const GrpcServerOptions& options) {
  // grpc.health.v1 on every server (Kubernetes' grpc probes, grpc_health_probe):
  // SERVING from the start unless the owner says otherwise
  // (SetServing below).
  grpc::EnableDefaultHealthCheckService(options.default_health_service);
  if (PortTaken(options.address)) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.address, ": the port is taken"));
  }
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(options.address, ProcessServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(
      std::min<int64_t>(options.max_message_bytes, INT32_MAX)));
  builder.SetMaxSendMessageSize(static_cast<int>(
      std::min<int64_t>(options.max_message_bytes, INT32_MAX)));
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             kServerMinPingIntervalMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  // One port, one process: SO_REUSEPORT would let a second server share a
  // taken port silently.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  for (grpc::Service* service : options.services) builder.RegisterService(service);
  if (options.completion_queue != nullptr) *options.completion_queue = builder.AddCompletionQueue();
  StartedServer out;
  out.server = builder.BuildAndStart();
  if (out.server == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", options.address, ": the port is taken or the address is not local"));
  }
  out.port = port;
  return out;
}

void SetServing(grpc::Server* server, bool serving) {
  if (grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService()) {
    health->SetServingStatus(serving);
  }
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address, int64_t max_message_bytes,
                                           absl::Duration dead_after) {
  grpc::ChannelArguments args;
  const int limit = static_cast<int>(std::min<int64_t>(max_message_bytes, INT32_MAX));
  args.SetMaxReceiveMessageSize(limit);
  args.SetMaxSendMessageSize(limit);
  const int half = static_cast<int>(
      std::clamp<int64_t>(absl::ToInt64Milliseconds(dead_after / 2), 100, kClientKeepaliveMs));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, dead_after > absl::ZeroDuration() ? half
                                                                             : kClientKeepaliveMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, dead_after > absl::ZeroDuration() ? half : 20000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Reconnect quickly after a peer restarts (C07): retries start at 100 ms
  // and never wait more than 1 s. gRPC also takes
  // GRPC_ARG_MIN_RECONNECT_BACKOFF_MS as the shortest time one connection
  // attempt may take: at 100 ms, a handshake on a loaded machine failed the
  // call ("connection attempt timed out before receiving SETTINGS"); at its
  // default (20 s) a reconnect after a restart took 10 s instead of 5.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Channels to different servers must not share one TCP connection.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(address, ProcessChannelCredentials(), args);
}

absl::Status WaitForChannel(const std::shared_ptr<grpc::Channel>& channel,
                            const std::string& address, const std::string& what,
                            absl::Duration timeout) {
  const auto deadline = std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout);
  if (channel->WaitForConnected(deadline)) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("cannot reach ", what, " at ", address,
                                             " within ", absl::FormatDuration(timeout)));
}

}  // namespace cairn
