// cairn._cairn: the client library (worker/client/client.h) for Python. One
// Client per worker process; values move between NumPy buffers (or anything
// with the buffer protocol: float32, C-contiguous) and Cairn without a copy
// on the Python side: a pull writes straight into the caller's array, a push
// reads straight from it. Every wait releases the GIL. Errors raise
// cairn.Error carrying the status code's name and the message. The Python
// package (cairn/__init__.py) wraps this module; docs/python.md is the guide.
#include <pybind11/pybind11.h>
#include <pybind11/eval.h>
#include <pybind11/stl.h>

#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cairn/v1/types.pb.h"
#include "common/daemon.h"
#include "common/security/transport_security.h"
#include "worker/client/client.h"

namespace py = pybind11;

namespace cairn {
namespace {

// cairn.Error, created in the module init.
PyObject* g_error = nullptr;

[[noreturn]] void Raise(const absl::Status& status) {
  py::object error = py::reinterpret_borrow<py::object>(g_error);
  py::object e = error(absl::StatusCodeToString(status.code()), std::string(status.message()));
  PyErr_SetObject(g_error, e.ptr());
  throw py::error_already_set();
}

void Check(const absl::Status& status) {
  if (!status.ok()) Raise(status);
}

// A float32, C-contiguous view of `object` (writable for pulls), checked
// against `expected` floats when expected >= 0. The buffer stays valid while
// the returned info (which holds a reference) lives.
py::buffer_info FloatBuffer(const py::object& object, const std::string& table, const char* what,
                            bool writable, int64_t expected) {
  py::buffer buffer = py::reinterpret_borrow<py::buffer>(object);
  py::buffer_info info = buffer.request(writable);
  if (info.format != py::format_descriptor<float>::format() || info.itemsize != 4) {
    Raise(absl::InvalidArgumentError(absl::StrCat(
        "table ", table, ": ", what, " must be float32, got format '", info.format, "'")));
  }
  int64_t stride = 4;
  for (int i = info.ndim - 1; i >= 0; --i) {
    if (info.shape[i] != 1 && info.strides[i] != stride) {
      Raise(absl::InvalidArgumentError(
          absl::StrCat("table ", table, ": ", what, " must be C-contiguous")));
    }
    stride *= info.shape[i];
  }
  if (expected >= 0 && info.size != expected) {
    Raise(absl::InvalidArgumentError(absl::StrCat("table ", table, ": ", what, " holds ",
                                                  info.size, " floats, expected ", expected)));
  }
  return info;
}

std::vector<int64_t> ShapeOf(const py::buffer_info& info) {
  return std::vector<int64_t>(info.shape.begin(), info.shape.end());
}

// uint64 keys from any integer buffer of 8-byte items (int64 ids are their
// bit patterns, field case C05).
py::buffer_info KeyBuffer(const py::object& object, const std::string& table) {
  py::buffer buffer = py::reinterpret_borrow<py::buffer>(object);
  py::buffer_info info = buffer.request();
  const bool integer = info.format == "q" || info.format == "Q" || info.format == "l" ||
                       info.format == "L";
  if (!integer || info.itemsize != 8 || info.ndim != 1 || (info.size > 1 && info.strides[0] != 8)) {
    Raise(absl::InvalidArgumentError(absl::StrCat(
        "table ", table, ": keys must be a contiguous 1-d array of int64 or uint64, got format '",
        info.format, "' with ", info.ndim, " dimensions")));
  }
  return info;
}

// What an operation in flight keeps alive: the buffers it reads or writes.
class Future {
 public:
  Future(std::future<absl::Status> f, std::vector<py::buffer_info> buffers)
      : future_(std::move(f)), buffers_(std::move(buffers)) {}

  // Waits (without the GIL) and raises cairn.Error when the operation failed.
  void Result() {
    if (!future_.valid()) {
      Check(done_);
      return;
    }
    {
      py::gil_scoped_release release;
      done_ = future_.get();
    }
    buffers_.clear();
    Check(done_);
  }

  bool Done() const {
    return !future_.valid() ||
           future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

 private:
  std::future<absl::Status> future_;
  std::vector<py::buffer_info> buffers_;
  absl::Status done_;
};

class PyClient {
 public:
  explicit PyClient(std::unique_ptr<Client> client) : client_(std::move(client)) {}

  Client& client() { return *client_; }

  const v1::TableSpec& Spec(const std::string& name) {
    absl::StatusOr<const v1::TableSpec*> spec = client_->Table(name);
    Check(spec.status());
    return **spec;
  }

  int64_t DenseSize(const v1::TableSpec& spec) {
    int64_t n = 1;
    for (int64_t d : spec.shape()) n *= d;
    return n;
  }

  void RequireKind(const v1::TableSpec& spec, v1::TableKind kind, const char* call) {
    if (spec.kind() != kind) {
      Raise(absl::InvalidArgumentError(absl::StrCat(
          "table ", spec.name(), " is ", spec.kind() == v1::TABLE_KIND_DENSE ? "dense" : "sparse",
          "; ", call, " needs a ", kind == v1::TABLE_KIND_DENSE ? "dense" : "sparse", " table")));
    }
  }

  // {name: array} of dense tables to pull into, as the client takes them;
  // `keep` holds the buffers they point into.
  std::vector<DenseBuffer> DenseOutputs(const py::dict& tables,
                                        std::vector<py::buffer_info>* keep) {
    std::vector<DenseBuffer> out;
    for (const auto& [key, value] : tables) {
      const std::string name = py::cast<std::string>(key);
      const v1::TableSpec& spec = Spec(name);
      RequireKind(spec, v1::TABLE_KIND_DENSE, "pull_dense");
      keep->push_back(FloatBuffer(py::reinterpret_borrow<py::object>(value), name, "the output",
                                  /*writable=*/true, DenseSize(spec)));
      out.push_back({name, absl::MakeSpan(static_cast<float*>(keep->back().ptr),
                                          static_cast<size_t>(keep->back().size))});
    }
    return out;
  }

  Future PullDense(const py::dict& tables) {
    std::vector<py::buffer_info> keep;
    std::vector<DenseBuffer> out = DenseOutputs(tables, &keep);
    return Future(client_->PullDense(std::move(out)), std::move(keep));
  }

  // {name: gradient} of dense tables, as the client takes them; `keep`
  // holds the buffers they point into.
  std::vector<ConstDenseBuffer> DenseGrads(const py::dict& grads,
                                           std::vector<py::buffer_info>* keep) {
    std::vector<ConstDenseBuffer> in;
    for (const auto& [key, value] : grads) {
      const std::string name = py::cast<std::string>(key);
      const v1::TableSpec& spec = Spec(name);
      RequireKind(spec, v1::TABLE_KIND_DENSE, "push_dense");
      keep->push_back(FloatBuffer(py::reinterpret_borrow<py::object>(value), name, "the gradient",
                                  /*writable=*/false, /*expected=*/-1));
      // The servers check the shape against the table's (InvalidArgument
      // naming both); a 1-d gradient of the right size is taken as the table's.
      std::vector<int64_t> shape = ShapeOf(keep->back());
      if (shape.size() == 1 && shape[0] == DenseSize(spec)) shape.clear();
      in.push_back({name,
                    absl::MakeConstSpan(static_cast<const float*>(keep->back().ptr),
                                        static_cast<size_t>(keep->back().size)),
                    std::move(shape)});
    }
    return in;
  }

  Future PushDense(const py::dict& grads) {
    std::vector<py::buffer_info> keep;
    std::vector<ConstDenseBuffer> in = DenseGrads(grads, &keep);
    return Future(client_->PushDense(std::move(in)), std::move(keep));
  }

  // {name: (keys, out)} / {name: (keys, grads)} for sparse tables.
  Future PullSparse(const py::dict& tables) {
    std::vector<SparseRows> out;
    std::vector<py::buffer_info> keep;
    for (const auto& [key, value] : tables) {
      const std::string name = py::cast<std::string>(key);
      const v1::TableSpec& spec = Spec(name);
      RequireKind(spec, v1::TABLE_KIND_SPARSE, "pull_sparse");
      const py::tuple pair = py::cast<py::tuple>(value);
      keep.push_back(KeyBuffer(pair[0], name));
      const auto* keys = static_cast<const Key*>(keep.back().ptr);
      const auto num_keys = static_cast<size_t>(keep.back().size);
      keep.push_back(FloatBuffer(pair[1], name, "the output", /*writable=*/true,
                                 num_keys * spec.width()));
      out.push_back({name, absl::MakeConstSpan(keys, num_keys),
                     absl::MakeSpan(static_cast<float*>(keep.back().ptr),
                                    static_cast<size_t>(keep.back().size))});
    }
    return Future(client_->PullSparse(std::move(out)), std::move(keep));
  }

  // {name: (keys, gradients)} of sparse tables, as the client takes them;
  // `keep` holds the buffers they point into.
  std::vector<ConstSparseRows> SparseGrads(const py::dict& grads,
                                           std::vector<py::buffer_info>* keep) {
    std::vector<ConstSparseRows> in;
    for (const auto& [key, value] : grads) {
      const std::string name = py::cast<std::string>(key);
      const v1::TableSpec& spec = Spec(name);
      RequireKind(spec, v1::TABLE_KIND_SPARSE, "push_sparse");
      const py::tuple pair = py::cast<py::tuple>(value);
      keep->push_back(KeyBuffer(pair[0], name));
      const auto* keys = static_cast<const Key*>(keep->back().ptr);
      const auto num_keys = static_cast<size_t>(keep->back().size);
      keep->push_back(FloatBuffer(pair[1], name, "the gradient", /*writable=*/false,
                                  num_keys * spec.width()));
      in.push_back({name, absl::MakeConstSpan(keys, num_keys),
                    absl::MakeConstSpan(static_cast<const float*>(keep->back().ptr),
                                        static_cast<size_t>(keep->back().size))});
    }
    return in;
  }

  Future PushSparse(const py::dict& grads) {
    std::vector<py::buffer_info> keep;
    std::vector<ConstSparseRows> in = SparseGrads(grads, &keep);
    return Future(client_->PushSparse(std::move(in)), std::move(keep));
  }

  // Dense and sparse gradients as one push that also ends the iteration
  // (Client::PushAndClock); waits without the GIL.
  void PushAndClock(const py::dict& dense, const py::dict& sparse) {
    std::vector<py::buffer_info> keep;
    std::vector<ConstDenseBuffer> d = DenseGrads(dense, &keep);
    std::vector<ConstSparseRows> r = SparseGrads(sparse, &keep);
    absl::Status s;
    {
      py::gil_scoped_release release;
      s = client_->PushAndClock(std::move(d), std::move(r));
    }
    Check(s);
  }

  // PushAndClock, then the next iteration's values of the dense tables in
  // `next` pulled in the same round trip (Client::PushClockAndPull); waits
  // without the GIL. `meanwhile` (None, or a callable taking no argument)
  // runs with the GIL while the calls are in flight; an exception it raises
  // is raised once the call returned, after the push's error if there is
  // one. Raises the push's error; returns the pull's error message, empty
  // when `next` holds the values.
  std::string PushClockAndPull(const py::dict& dense, const py::dict& sparse,
                               const py::dict& next, const py::object& meanwhile) {
    std::vector<py::buffer_info> keep;
    std::vector<ConstDenseBuffer> d = DenseGrads(dense, &keep);
    std::vector<ConstSparseRows> r = SparseGrads(sparse, &keep);
    std::vector<DenseBuffer> out = DenseOutputs(next, &keep);
    if (!meanwhile.is_none() && !PyCallable_Check(meanwhile.ptr())) {
      throw py::type_error("meanwhile must be None or a callable taking no argument");
    }
    absl::Status s;
    absl::Status pulled;
    std::optional<py::error_already_set> raised;
    {
      py::gil_scoped_release release;
      s = client_->PushClockAndPull(std::move(d), std::move(r), std::move(out), {}, &pulled,
                                    [&meanwhile, &raised] {
                                      if (meanwhile.is_none()) return;
                                      py::gil_scoped_acquire acquire;
                                      try {
                                        meanwhile();
                                      } catch (py::error_already_set& e) {
                                        raised.emplace(std::move(e));
                                      }
                                    });
    }
    Check(s);
    if (raised.has_value()) throw std::move(*raised);
    return pulled.ok() ? std::string() : std::string(pulled.message());
  }

  void Clock() {
    absl::Status s;
    {
      py::gil_scoped_release release;
      s = client_->Clock();
    }
    Check(s);
  }

  void Finish() {
    absl::Status s;
    {
      py::gil_scoped_release release;
      s = client_->Finish();
    }
    Check(s);
  }

  // [{name, kind, shape, width, consistency, staleness}] in the job's order.
  py::list Tables() {
    py::list out;
    for (const v1::TableSpec& t : client_->job().tables()) {
      py::dict d;
      d["name"] = t.name();
      d["kind"] = t.kind() == v1::TABLE_KIND_DENSE ? "dense" : "sparse";
      d["shape"] = std::vector<int64_t>(t.shape().begin(), t.shape().end());
      d["width"] = t.width();
      d["consistency"] = v1::Consistency_Name(t.consistency());
      d["staleness"] = t.staleness();
      out.append(d);
    }
    return out;
  }

 private:
  std::unique_ptr<Client> client_;
};

std::unique_ptr<PyClient> Connect(const std::string& coordinator, int worker_id,
                                  double connect_timeout, double rpc_deadline, bool shared_memory,
                                  int64_t cache_bytes, int push_attempts, double busy_poll) {
  if (!(busy_poll >= 0.0 && busy_poll <= 0.1)) {
    Check(absl::InvalidArgumentError(absl::StrCat(
        "busy_poll must be from 0 (off) to 0.1 seconds, as rpc.busy_poll; got ", busy_poll)));
  }
  ClientOptions options;
  options.coordinator = coordinator;
  options.worker_id = worker_id;
  options.connect_timeout = absl::Seconds(connect_timeout);
  options.rpc_deadline = absl::Seconds(rpc_deadline);
  options.shared_memory = shared_memory;
  options.cache_bytes = static_cast<uint64_t>(cache_bytes);
  options.push_attempts = push_attempts;
  options.busy_poll = absl::Seconds(busy_poll);
  absl::StatusOr<std::unique_ptr<Client>> client;
  {
    py::gil_scoped_release release;
    client = Client::Connect(options);
  }
  Check(client.status());
  return std::make_unique<PyClient>(*std::move(client));
}

}  // namespace
}  // namespace cairn

PYBIND11_MODULE(_cairn, m) {
  using cairn::Future;
  using cairn::PyClient;
  m.doc() = "Cairn's client library (worker/client/client.h); use the cairn package.";
  // cairn.Error(code, message): .code is the status code's name
  // ("INVALID_ARGUMENT", "UNAVAILABLE", ...), .message the text.
  py::object exception = py::reinterpret_borrow<py::object>(PyExc_RuntimeError);
  py::dict ns;
  py::exec(R"(
class Error(RuntimeError):
    """A Cairn call failed: .code names the status ("INVALID_ARGUMENT",
    "UNAVAILABLE", ...), .message says what was wrong."""
    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
)",
           py::globals(), ns);
  py::object error = ns["Error"];
  error.attr("__module__") = "cairn";
  cairn::g_error = error.ptr();
  Py_INCREF(cairn::g_error);
  m.attr("Error") = error;

  py::class_<Future>(m, "Future")
      .def("result", &Future::Result,
           "Waits for the operation (without the GIL); raises cairn.Error if it failed.")
      .def("done", &Future::Done, "Whether the operation has ended.");

  py::class_<PyClient>(m, "Client")
      .def_property_readonly("worker_id",
                             [](PyClient& c) { return c.client().worker_id(); })
      .def_property_readonly("iteration", [](PyClient& c) { return c.client().clock(); },
                             "iterations this worker has completed (clock() calls)")
      .def("tables", &PyClient::Tables)
      .def("pull_dense_async", &PyClient::PullDense, py::arg("tables"))
      .def("push_dense_async", &PyClient::PushDense, py::arg("grads"))
      .def("pull_sparse_async", &PyClient::PullSparse, py::arg("tables"))
      .def("push_sparse_async", &PyClient::PushSparse, py::arg("grads"))
      .def("push_and_clock", &PyClient::PushAndClock, py::arg("dense"), py::arg("sparse"))
      .def("push_clock_and_pull", &PyClient::PushClockAndPull, py::arg("dense"),
           py::arg("sparse"), py::arg("next"), py::arg("meanwhile") = py::none())
      .def("clock", &PyClient::Clock)
      .def("finish", &PyClient::Finish)
      .def("stats", [](PyClient& c) {
        const cairn::ClientStats s = c.client().Stats();
        py::dict d;
        d["pulls"] = s.pulls;
        d["cache_hits"] = s.cache_hits;
        d["cache_misses"] = s.cache_misses;
        d["pull_seconds"] = s.pull_seconds;
        d["shared_memory_regions"] = s.shared_memory_regions;
        return d;
      });

  m.def(
      "use_tls",
      [](const std::string& ca_file, const std::string& cert_file, const std::string& key_file,
         const std::string& token_file) {
        cairn::Check(cairn::InstallTransportSecurity({.ca_file = ca_file,
                                                      .cert_file = cert_file,
                                                      .key_file = key_file,
                                                      .token_file = token_file}));
      },
      py::arg("ca_file"), py::arg("cert_file"), py::arg("key_file"), py::arg("token_file") = "",
      "Mutual TLS for every later connection of this process (docs/security.md): the job's CA "
      "bundle, this worker's certificate and key (PEM). Call once, before connect().");
  m.def("keep_freed_memory", &cairn::TuneAllocator,
        "Makes this process's malloc keep freed blocks for reuse instead of returning every "
        "buffer over 128 KiB to the kernel (TuneAllocator, common/daemon.h), as Cairn's own "
        "processes do: a training step's large tensors then reuse warm pages instead of "
        "faulting fresh zeroed ones in each step. Process-wide; safe to call more than once.");
  m.def("connect", &cairn::Connect, py::arg("coordinator"), py::arg("worker_id") = -1,
        py::arg("connect_timeout") = 60.0, py::arg("rpc_deadline") = 60.0,
        py::arg("shared_memory") = true, py::arg("cache_bytes") = int64_t{64} << 20,
        py::arg("push_attempts") = 3, py::arg("busy_poll") = 0.0,
        "Registers as a worker of the job whose coordinator is at `coordinator` (host:port) "
        "and waits at its start-up barrier (Client::Connect).");
}
