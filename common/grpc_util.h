// gRPC servers and channels with Cairn's settings applied explicitly: message
// size limits on both sides (gRPC's 4 MiB default never applies), keepalive
// values that agree between client and server (a client never pings more often
// than the server permits, so no GOAWAY "too_many_pings").
#ifndef CAIRN_COMMON_GRPC_UTIL_H_
#define CAIRN_COMMON_GRPC_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace grpc {
class Channel;
class Server;
class ServerCompletionQueue;
class Service;
class ServerBuilder;
}  // namespace grpc

namespace cairn {

// Client keepalive: ping after 30 s idle; the server permits pings every 10 s,
// with or without calls in flight.
inline constexpr int kClientKeepaliveMs = 30000;
inline constexpr int kServerMinPingIntervalMs = 10000;

struct GrpcServerOptions {
  std::string address;            // host:port; port 0 picks a free one
  int64_t max_message_bytes = 256ll << 20;
  std::vector<grpc::Service*> services;  // must outlive the server
  int num_cqs = 0;                // 0: gRPC default; callback servers ignore it
  // Set: the server gets one completion queue for its asynchronous methods,
  // put here (to be driven by a CompletionLoop).
  std::unique_ptr<grpc::ServerCompletionQueue>* completion_queue = nullptr;
  // false: gRPC's own grpc.health.v1 service (callback API, so it starts
  // gRPC's callback threads) is left out; the owner serves grpc.health.v1
  // itself (common/health_service.h) and SetServing does nothing.
  bool default_health_service = true;
};

struct StartedServer {
  std::unique_ptr<grpc::Server> server;
  int port = 0;                   // bound port
};

// Builds and starts a server, under this process's transport security (TLS
// with client certificates and the role policy once installed). Unavailable naming the address when the port is
// taken or the address cannot be bound.
absl::StatusOr<StartedServer> StartGrpcServer(const GrpcServerOptions& options);

// Sets what grpc.health.v1 answers for every service of `server` (started
// by StartGrpcServer, which serves it): SERVING or NOT_SERVING. A server
// restoring its state, or draining at a stop, is not serving. Thread-safe.
void SetServing(grpc::Server* server, bool serving);

// A channel to `address` with Cairn's limits and keepalive, under this
// process's transport security (common/security/transport_security.h: TLS
// once installed, plaintext otherwise). With
// `dead_after` > 0 (the data path: the job's lease_timeout) the channel pings
// every dead_after / 2 and drops a connection whose ping is not answered
// within dead_after / 2, failing its calls with UNAVAILABLE: a peer cut off
// silently (no reset) is noticed within about a lease, as the coordinator
// notices it, instead of at each call's deadline.
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address, int64_t max_message_bytes,
                                           absl::Duration dead_after = absl::ZeroDuration());

// Waits up to `timeout` for the channel to connect. Unavailable naming
// `address` and `what` ("coordinator") when it does not.
absl::Status WaitForChannel(const std::shared_ptr<grpc::Channel>& channel,
                            const std::string& address, const std::string& what,
                            absl::Duration timeout);

}  // namespace cairn

#endif  // CAIRN_COMMON_GRPC_UTIL_H_
