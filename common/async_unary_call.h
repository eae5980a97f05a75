// One unary call of a gRPC asynchronous-API method, served on a
// CompletionLoop: Listen waits for the method's next call; when one
// arrives, a new wait starts and the handler runs on the loop's thread
// with the call. The handler (or whatever it hands the call to, on any
// thread) answers it once with Finish; the call deletes itself when gRPC
// has sent the answer.
#ifndef CAIRN_COMMON_ASYNC_UNARY_CALL_H_
#define CAIRN_COMMON_ASYNC_UNARY_CALL_H_

#include <grpcpp/completion_queue.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/async_unary_call.h>

#include <functional>

#include "common/completion_loop.h"

namespace cairn {

// `Service`: the generated service type the method belongs to (one of its
// WithAsyncMethod_ or WithRawMethod_ bases); `Request` and `Response`: its
// messages (grpc::ByteBuffer for a raw method).
template <class Service, class Request, class Response>
class AsyncUnaryCall final : public CompletionLoop::Tag {
 public:
  using RequestMethod = void (Service::*)(grpc::ServerContext*, Request*,
                                          grpc::ServerAsyncResponseWriter<Response>*,
                                          grpc::CompletionQueue*, grpc::ServerCompletionQueue*,
                                          void*);
  using Handler = std::function<void(AsyncUnaryCall*)>;

  // Waits on `cq` (a CompletionLoop's server_cq) for the next call of
  // `method` of `service`, then for each next one, until the server shuts
  // down. `service` and `handler` must outlive the server.
  static void Listen(Service* service, RequestMethod method, grpc::ServerCompletionQueue* cq,
                     const Handler* handler) {
    auto* call = new AsyncUnaryCall(service, method, cq, handler);
    (service->*method)(&call->context_, &call->request_, &call->writer_, cq, cq, call);
  }

  grpc::ServerContext& context() { return context_; }
  const Request& request() const { return request_; }
  Request* mutable_request() { return &request_; }
  Response* response() { return &response_; }

  // Answers the call: `response()` when `status` is OK, else `status`
  // alone. Exactly once, from any thread; the call must not be touched
  // afterwards.
  void Finish(const grpc::Status& status) {
    if (status.ok()) {
      writer_.Finish(response_, status, this);
    } else {
      writer_.FinishWithError(status, this);
    }
  }

  void Proceed(bool ok) override {
    if (!arrived_) {
      arrived_ = true;
      if (!ok) {  // the server is shutting down: no call came
        delete this;
        return;
      }
      Listen(service_, method_, cq_, handler_);
      (*handler_)(this);
      return;
    }
    delete this;  // the answer went out (or the call was cancelled)
  }

 private:
  AsyncUnaryCall(Service* service, RequestMethod method, grpc::ServerCompletionQueue* cq,
                 const Handler* handler)
      : service_(service), method_(method), cq_(cq), handler_(handler), writer_(&context_) {}

  Service* const service_;
  const RequestMethod method_;
  grpc::ServerCompletionQueue* const cq_;
  const Handler* const handler_;
  grpc::ServerContext context_;
  Request request_;
  Response response_;
  grpc::ServerAsyncResponseWriter<Response> writer_;
  bool arrived_ = false;
};

}  // namespace cairn

#endif  // CAIRN_COMMON_ASYNC_UNARY_CALL_H_
