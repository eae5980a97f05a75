#include "tools/bench/bench_reference.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <algorithm>
#include <cstring>
#include <future>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "common/grpc_util.h"
#include "common/status_conversion.h"
#include "common/status_macros.h"
#include "tools/bench/bench_process.h"

namespace cairn::bench {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitPortTaken = 3;
constexpr absl::Duration kCallDeadline = absl::Seconds(60);

// Counts the pieces of a push stream; acks the total when the client is done.
// Not thread-safe; gRPC runs one of its reactions at a time and deletes it in OnDone.
class PushReader final : public grpc::ServerReadReactor<Payload> {
 public:
  explicit PushReader(Ack* ack) : ack_(ack) { StartRead(&piece_); }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client called WritesDone (or went away)
      ack_->set_received_bytes(received_);
      Finish(grpc::Status::OK);
      return;
    }
    received_ += piece_.data().size();
    StartRead(&piece_);
  }
  void OnDone() override { delete this; }

 private:
  Ack* const ack_;
  Payload piece_;
  uint64_t received_ = 0;
};

// Writes a pull's reply in pieces, the next one as soon as gRPC took the last.
// Not thread-safe; gRPC runs one of its reactions at a time and deletes it in
// OnDone. `source` must outlive it.
class PullWriter final : public grpc::ServerWriteReactor<Payload> {
 public:
  PullWriter(const PullSpec& spec, const std::string& source)
      : source_(source), remaining_(spec.reply_bytes()),
        piece_bytes_(spec.piece_bytes() == 0 ? spec.reply_bytes() : spec.piece_bytes()) {
    if (remaining_ > source_.size()) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat("reply_bytes ", remaining_, " exceeds the ",
                                       source_.size(), "-byte source")));
      return;
    }
    WriteNext();
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "client went away mid-stream"));
      return;
    }
    WriteNext();
  }
  void OnDone() override { delete this; }

 private:
  void WriteNext() {
    if (remaining_ == 0) {
      Finish(grpc::Status::OK);
      return;
    }
    const uint64_t n = std::min(piece_bytes_, remaining_);
    piece_.set_data(source_.data() + offset_, n);
    offset_ += n;
    remaining_ -= n;
    StartWrite(&piece_);
  }

  const std::string& source_;
  uint64_t offset_ = 0;
  uint64_t remaining_;
  const uint64_t piece_bytes_;
  Payload piece_;
};

// Thread-safe: the source buffer is immutable after construction.
class ReferenceServiceImpl final : public ReferenceService::CallbackService {
 public:
  ReferenceServiceImpl() : source_(kMaxReferenceReplyBytes, '\0') {
    for (size_t i = 0; i < source_.size(); ++i) source_[i] = static_cast<char>(i * 131 % 251);
  }

  grpc::ServerUnaryReactor* Push(grpc::CallbackServerContext* context, const Payload* request,
                                 Ack* response) override {
    response->set_received_bytes(request->data().size());
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* Pull(grpc::CallbackServerContext* context, const PullSpec* request,
                                 Payload* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (request->reply_bytes() > source_.size()) {
      reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                   absl::StrCat("reply_bytes ", request->reply_bytes(),
                                                " exceeds the ", source_.size(),
                                                "-byte source")));
      return reactor;
    }
    response->set_data(source_.data(), request->reply_bytes());
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerReadReactor<Payload>* PushStream(grpc::CallbackServerContext* context,
                                           Ack* response) override {
    return new PushReader(response);
  }

  grpc::ServerWriteReactor<Payload>* PullStream(grpc::CallbackServerContext* context,
                                                const PullSpec* request) override {
    return new PullWriter(*request, source_);
  }

 private:
  std::string source_;
};

}  // namespace

int RunReferenceServer(const std::string& port_file, int64_t max_message_bytes) {
  // Block the termination signals before gRPC starts threads; sigwait takes them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  ReferenceServiceImpl service;
  GrpcServerOptions options;
  options.address = "127.0.0.1:0";
  options.max_message_bytes = max_message_bytes;
  options.services = {&service};
  absl::StatusOr<StartedServer> started = StartGrpcServer(options);
  if (!started.ok()) {
    std::cerr << "reference server: " << started.status().message() << "\n";
    return kExitPortTaken;
  }
  if (absl::Status s = WriteTextFile(port_file, absl::StrCat("grpc=", started->port, "\n"));
      !s.ok()) {
    std::cerr << "reference server: " << s.message() << "\n";
    return kExitFailure;
  }
  int sig = 0;
  sigwait(&signals, &sig);
  started->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  started->server->Wait();
  return kExitOk;
}

uint64_t StreamPieceBytes(uint64_t total_bytes) {
  const uint64_t quarter = (total_bytes + 3) / 4;
  return std::max<uint64_t>(4, std::min<uint64_t>(uint64_t{1} << 20, (quarter + 3) / 4 * 4));
}

ReferenceClient::ReferenceClient(const std::string& address, int64_t max_message_bytes)
    : address_(address),
      channel_(MakeChannel(address, max_message_bytes)),
      stub_(ReferenceService::NewStub(channel_)) {}

absl::Status ReferenceClient::WaitReady(absl::Duration timeout) {
  return WaitForChannel(channel_, address_, "reference server", timeout);
}

namespace {

void SetDeadline(grpc::ClientContext* context) {
  context->set_deadline(absl::ToChronoTime(absl::Now() + kCallDeadline));
}

absl::Status CheckSize(const char* what, uint64_t got, uint64_t want) {
  if (got == want) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("reference ", what, " moved ", got, " bytes, expected ", want));
}

}  // namespace

absl::Status ReferenceClient::OnePush(absl::Span<const char> keys, absl::Span<const char> values,
                                      bool callback) {
  Payload request;
  std::string* data = request.mutable_data();
  data->reserve(keys.size() + values.size());
  data->append(keys.data(), keys.size());
  data->append(values.data(), values.size());
  grpc::ClientContext context;
  SetDeadline(&context);
  Ack ack;
  grpc::Status s;
  if (callback) {
    std::promise<grpc::Status> done;
    std::future<grpc::Status> status = done.get_future();
    stub_->async()->Push(&context, &request, &ack,
                         [&done](grpc::Status r) { done.set_value(std::move(r)); });
    s = status.get();
  } else {
    s = stub_->Push(&context, request, &ack);
  }
  const char* what = callback ? "callback push" : "unary push";
  if (!s.ok()) return Annotate(FromGrpcStatus(s), absl::StrCat("reference ", what));
  return CheckSize(what, ack.received_bytes(), keys.size() + values.size());
}

absl::Status ReferenceClient::OnePull(absl::Span<const char> keys, absl::Span<char> out,
                                      bool callback) {
  PullSpec request;
  request.set_keys(keys.data(), keys.size());
  request.set_reply_bytes(out.size());
  grpc::ClientContext context;
  SetDeadline(&context);
  Payload reply;
  grpc::Status s;
  if (callback) {
    std::promise<grpc::Status> done;
    std::future<grpc::Status> status = done.get_future();
    stub_->async()->Pull(&context, &request, &reply,
                         [&done](grpc::Status r) { done.set_value(std::move(r)); });
    s = status.get();
  } else {
    s = stub_->Pull(&context, request, &reply);
  }
  const char* what = callback ? "callback pull" : "unary pull";
  if (!s.ok()) return Annotate(FromGrpcStatus(s), absl::StrCat("reference ", what));
  RETURN_IF_ERROR(CheckSize(what, reply.data().size(), out.size()));
  std::memcpy(out.data(), reply.data().data(), out.size());
  return absl::OkStatus();
}

absl::Status ReferenceClient::StreamPush(absl::Span<const char> keys,
                                         absl::Span<const char> values, uint64_t piece_bytes) {
  grpc::ClientContext context;
  SetDeadline(&context);
  Ack ack;
  std::unique_ptr<grpc::ClientWriter<Payload>> writer = stub_->PushStream(&context, &ack);
  Payload piece;
  uint64_t offset = 0;
  do {
    const uint64_t n = std::min<uint64_t>(piece_bytes, values.size() - offset);
    std::string* data = piece.mutable_data();
    data->clear();
    if (offset == 0) data->append(keys.data(), keys.size());
    data->append(values.data() + offset, n);
    offset += n;
    if (!writer->Write(piece)) break;  // the stream broke; Finish says why
  } while (offset < values.size());
  writer->WritesDone();
  grpc::Status s = writer->Finish();
  if (!s.ok()) return Annotate(FromGrpcStatus(s), "reference stream push");
  return CheckSize("stream push", ack.received_bytes(), keys.size() + values.size());
}

absl::Status ReferenceClient::StreamPull(absl::Span<const char> keys, absl::Span<char> out,
                                         uint64_t piece_bytes) {
  PullSpec request;
  request.set_keys(keys.data(), keys.size());
  request.set_reply_bytes(out.size());
  request.set_piece_bytes(piece_bytes);
  grpc::ClientContext context;
  SetDeadline(&context);
  std::unique_ptr<grpc::ClientReader<Payload>> reader = stub_->PullStream(&context, request);
  Payload piece;
  uint64_t received = 0;
  while (reader->Read(&piece)) {
    const uint64_t n = piece.data().size();
    if (received + n <= out.size()) std::memcpy(out.data() + received, piece.data().data(), n);
    received += n;
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return Annotate(FromGrpcStatus(s), "reference stream pull");
  return CheckSize("stream pull", received, out.size());
}

}  // namespace cairn::bench
