"""Cairn's client for Python: this process becomes a worker of a Cairn job.

    import cairn
    client = cairn.connect("127.0.0.1:7070")
    w = client.pull("mlp.fc0.weight")          # a NumPy array of the table's shape
    client.push("mlp.fc0.weight", grad)        # NumPy array or CPU torch tensor
    client.clock()                             # one iteration done (BSP/SSP)
    client.finish()

Values are float32; arrays are read and written in place (no copy on the
Python side). Every call that waits releases the GIL. A failed call raises
cairn.Error with .code ("INVALID_ARGUMENT", "UNAVAILABLE", ...) and
.message. docs/python.md is the guide; cairn.torch wraps PyTorch models.
"""
import warnings

import numpy as np

from . import _cairn
from ._cairn import Error, Future

__all__ = ["connect", "use_tls", "keep_freed_memory", "Client", "Error", "Future"]

use_tls = _cairn.use_tls
keep_freed_memory = _cairn.keep_freed_memory


def _float_view(x, what, name):
    """A float32 C-contiguous NumPy view of a NumPy array or a CPU torch tensor."""
    if hasattr(x, "detach") and hasattr(x, "numpy"):  # a torch.Tensor, no import needed
        if getattr(x, "device", None) is not None and x.device.type != "cpu":
            raise Error("INVALID_ARGUMENT",
                        f"table {name}: {what} is on {x.device}; move it to the CPU first")
        x = x.detach().numpy()
    if not isinstance(x, np.ndarray):
        x = np.asarray(x)
    if x.dtype != np.float32:
        raise Error("INVALID_ARGUMENT", f"table {name}: {what} must be float32, got {x.dtype}")
    return x


def _keys(keys, name):
    if hasattr(keys, "detach") and hasattr(keys, "numpy"):
        keys = keys.detach().cpu().numpy()
    keys = np.ascontiguousarray(keys)
    if keys.dtype not in (np.int64, np.uint64):
        raise Error("INVALID_ARGUMENT",
                    f"table {name}: keys must be int64 or uint64, got {keys.dtype}")
    return keys.reshape(-1)


def _grad_views(dense, rows):
    """Dense gradients ({name: array}) and row gradients ({name: (keys,
    grads)}) as the native push calls take them."""
    dense_views = {n: _float_view(g, "the gradient", n) for n, g in (dense or {}).items()}
    row_views = {n: (_keys(k, n), _float_view(g, "the gradient", n))
                 for n, (k, g) in (rows or {}).items()}
    return dense_views, row_views


class Client:
    """A worker of a Cairn job (worker/client/client.h). Thread-safe."""

    def __init__(self, native):
        self._native = native
        self._specs = {t["name"]: t for t in native.tables()}

    @property
    def worker_id(self):
        return self._native.worker_id

    @property
    def iteration(self):
        """Iterations this worker has completed (calls to clock())."""
        return self._native.iteration

    def tables(self):
        """The job's tables: [{name, kind, shape, width, consistency, staleness}]."""
        return [dict(t) for t in self._specs.values()]

    def _spec(self, name):
        if name not in self._specs:
            raise Error("NOT_FOUND", f"no table named {name} in this job "
                        f"(tables: {', '.join(self._specs)})")
        return self._specs[name]

    # Dense tables.
    def pull_dense_async(self, tables):
        """Reads each dense table into its array ({name: float32 array}), in place."""
        views = {n: _float_view(a, "the output", n) for n, a in tables.items()}
        return self._native.pull_dense_async(views)

    def pull_dense(self, tables):
        self.pull_dense_async(tables).result()

    def pull(self, name, out=None):
        """The dense table `name` as a float32 array of its shape (into `out` if given)."""
        spec = self._spec(name)
        if out is None:
            out = np.empty(spec["shape"], dtype=np.float32)
        self.pull_dense({name: out})
        return out

    def push_dense_async(self, grads):
        """Pushes a gradient per dense table ({name: float32 array of its shape})."""
        views = {n: _float_view(g, "the gradient", n) for n, g in grads.items()}
        return self._native.push_dense_async(views)

    def push_dense(self, grads):
        self.push_dense_async(grads).result()

    def push(self, name, grad):
        self.push_dense({name: grad})

    # Sparse tables: rows keyed by int64 or uint64 ids.
    def pull_rows_async(self, name, keys, out):
        keys = _keys(keys, name)
        return self._native.pull_sparse_async({name: (keys, _float_view(out, "the output", name))})

    def pull_rows(self, name, keys, out=None):
        """Rows of the sparse table `name` for `keys`: a [len(keys), width] float32 array."""
        spec = self._spec(name)
        keys = _keys(keys, name)
        if out is None:
            out = np.empty((keys.size, spec["width"]), dtype=np.float32)
        self.pull_rows_async(name, keys, out).result()
        return out

    def push_rows_async(self, name, keys, grads):
        keys = _keys(keys, name)
        return self._native.push_sparse_async(
            {name: (keys, _float_view(grads, "the gradient", name))})

    def push_rows(self, name, keys, grads):
        """Pushes row gradients ([len(keys), width]); repeated keys are summed."""
        self.push_rows_async(name, keys, grads).result()

    def pull_rows_many(self, requests):
        """Rows of several sparse tables in one operation (one request per
        server for all of them): {name: keys} -> {name: [len(keys), width]}."""
        out, native = {}, {}
        for name, keys in requests.items():
            keys = _keys(keys, name)
            out[name] = np.empty((keys.size, self._spec(name)["width"]), dtype=np.float32)
            native[name] = (keys, out[name])
        self._native.pull_sparse_async(native).result()
        return out

    def push_rows_many(self, grads):
        """Row gradients of several sparse tables in one operation:
        {name: (keys, [len(keys), width] float32)}."""
        native = {name: (_keys(k, name), _float_view(g, "the gradient", name))
                  for name, (k, g) in grads.items()}
        self._native.push_sparse_async(native).result()

    def clock(self):
        """Ends this worker's iteration (the BSP barrier / SSP bound count these)."""
        self._native.clock()

    def push_and_clock(self, dense=None, rows=None):
        """Pushes dense gradients ({name: array of the table's shape}) and row
        gradients ({name: (keys, [len(keys), width] float32)}) as one
        operation, then ends the iteration, as push_dense, push_rows_many and
        clock() would, in one round trip fewer where the push is one request
        (one server): the clock tick then travels with it."""
        self._native.push_and_clock(*_grad_views(dense, rows))

    def push_clock_and_pull(self, dense=None, rows=None, pull_dense=None, meanwhile=None):
        """push_and_clock, then the next iteration's values of the dense
        tables in `pull_dense` ({name: float32 array of the table's shape},
        filled in place), in the same round trip: the pull goes out with the
        push, and each server answers it once it has recorded this worker's
        tick (so it reads this push). Raises the push's error. Returns True
        when the arrays hold the next iteration's values; False, with a
        warning, when the pull ahead failed (pull again with pull_dense).

        `meanwhile`, a callable taking no argument, runs once on this thread
        after the push and the pull are sent and before the wait for them
        (not at all when they are refused before anything is sent): the
        next batch of data, say, is prepared during the round trip instead
        of after it. It must not touch the arrays of `dense` or
        `pull_dense`, nor call this client. An exception it raises is
        raised once the call returned (after the push's error, if any)."""
        out_views = {n: _float_view(a, "the output", n) for n, a in (pull_dense or {}).items()}
        error = self._native.push_clock_and_pull(*_grad_views(dense, rows), out_views,
                                                 meanwhile)
        if error:
            warnings.warn(f"{error}; pull again", RuntimeWarning, stacklevel=2)
            return False
        return True

    def finish(self):
        """Leaves the job cleanly."""
        self._native.finish()

    def stats(self):
        return self._native.stats()

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        if kind is None:
            self.finish()
        return False


def connect(coordinator, worker_id=-1, connect_timeout=60.0, rpc_deadline=60.0,
            shared_memory=True, cache_bytes=64 << 20, push_attempts=3, keep_freed_memory=True,
            busy_poll=0.0):
    """Registers as a worker with the coordinator at host:port and waits for the
    job's start-up barrier. worker_id -1 lets the coordinator pick; times are
    in seconds.

    busy_poll: how long a call that waits for its answer polls for it without
    sleeping before it sleeps, from 0 (off) to 0.1, as rpc.busy_poll
    (docs/config.md); it pays where this process has a CPU of its own.

    keep_freed_memory: first makes this process's malloc keep freed memory for
    reuse, as cairn-worker does (cairn.keep_freed_memory); glibc may otherwise
    return large freed buffers to the kernel, and a step that allocates them
    again pays a page fault per 4 KiB. False leaves malloc as it is."""
    if keep_freed_memory:
        _cairn.keep_freed_memory()
    return Client(_cairn.connect(coordinator, worker_id, connect_timeout, rpc_deadline,
                                 shared_memory, cache_bytes, push_attempts, busy_poll))
