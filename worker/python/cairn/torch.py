"""PyTorch on Cairn: a model whose parameters live in the job's dense tables,
and an embedding module backed by a sparse table.

    import cairn, cairn.torch
    client = cairn.connect("127.0.0.1:7070")
    model = cairn.torch.ParameterServerModel(MyNet(), client, prefix="mlp.")
    for x, y in batches:
        model.pull()                         # the servers' values into the parameters
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        model.push()                         # gradients to the servers; ends the iteration

Optimization happens on the servers (the job's optimizer, tables[].optimizer
or training.optimizer): there is no torch optimizer step. docs/python.md.
"""
import numpy as np
import torch

from . import Error

__all__ = ["ParameterServerModel", "Embedding", "Embeddings", "tables_yaml"]


def _table_name(prefix, parameter_name):
    return prefix + parameter_name


def tables_yaml(module, prefix="", optimizer="{type: sgd, learning_rate: 0.1}"):
    """The tables: section of a job YAML that holds `module`'s parameters, one
    dense table per named parameter (zeros; the job's YAML may set init)."""
    lines = ["tables:"]
    for name, p in module.named_parameters():
        lines += [f"  - name: {_table_name(prefix, name)}",
                  "    kind: dense",
                  f"    shape: [{', '.join(str(d) for d in p.shape)}]",
                  f"    optimizer: {optimizer}"]
    return "\n".join(lines) + "\n"


class ParameterServerModel(torch.nn.Module):
    """Wraps `module`: each named parameter is the dense table prefix + name.

    At construction every parameter's table must exist with the same shape
    (cairn.Error INVALID_ARGUMENT or NOT_FOUND naming the table otherwise).
    pull() overwrites the parameters with the servers' values in one
    operation; push() sends every gradient in one operation, zeroes the
    gradients and ends the iteration (clock), under the job's consistency.
    A push that ends the iteration also pulls the next iteration's values
    into the parameters in the same round trip (Client.push_clock_and_pull),
    so the next pull() has nothing left to do.
    """

    def __init__(self, module, client, prefix=""):
        super().__init__()
        self.module = module
        self.client = client
        self.prefix = prefix
        specs = {t["name"]: t for t in client.tables()}
        self._params = []
        for name, p in module.named_parameters():
            table = _table_name(prefix, name)
            spec = specs.get(table)
            if spec is None:
                raise Error("NOT_FOUND", f"parameter {name}: the job has no table {table}")
            if spec["kind"] != "dense" or list(spec["shape"]) != list(p.shape):
                raise Error("INVALID_ARGUMENT",
                            f"parameter {name}: table {table} is {spec['kind']} "
                            f"{list(spec['shape'])}, the parameter is {list(p.shape)}")
            if p.dtype != torch.float32 or p.device.type != "cpu":
                raise Error("INVALID_ARGUMENT",
                            f"parameter {name}: Cairn tables hold float32 on the CPU, "
                            f"got {p.dtype} on {p.device}")
            self._params.append((table, p))
        self._pulled = False  # the parameters hold what push() pulled ahead

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def pull(self):
        """The servers' values into the parameters (one operation, in place);
        nothing to do when the last push() pulled them ahead."""
        if self._pulled:
            self._pulled = False
            return
        self.client.pull_dense({t: p.data.numpy() for t, p in self._params})

    def push(self, clock=True, meanwhile=None):
        """Every gradient to the servers (one operation); then zeroes the
        gradients and, with `clock`, ends this worker's iteration and pulls
        the next iteration's values into the parameters with it.
        `meanwhile` (a callable taking no argument, or None) runs once while
        the push and that pull are in flight (Client.push_clock_and_pull),
        or while the push alone is, without `clock`: preparing the next
        batch there overlaps the round trip. It must not touch the model's
        parameters or gradients."""
        grads = {}
        for t, p in self._params:
            g = p.grad if p.grad is not None else torch.zeros_like(p)
            grads[t] = g.detach().contiguous().numpy()
        if clock:
            self._pulled = False  # until the pull ahead has written them
            self._pulled = self.client.push_clock_and_pull(
                dense=grads, pull_dense={t: p.data.numpy() for t, p in self._params},
                meanwhile=meanwhile)
        else:
            pushed = self.client.push_dense_async(grads)
            try:
                if meanwhile is not None:
                    meanwhile()
            finally:
                pushed.result()  # `grads` are read until then
        for _, p in self._params:
            p.grad = None


class Embedding(torch.nn.Module):
    """Rows of the sparse table `table` for integer ids: forward(ids) returns a
    tensor of shape ids.shape + [width]. The rows a batch uses are pulled
    once per distinct id; after backward, push() sends each distinct id's
    summed gradient (the server's optimizer applies it). Call push() before
    the model's clock (ParameterServerModel.push does the clock)."""

    def __init__(self, client, table):
        super().__init__()
        self.client = client
        self.table = table
        specs = {t["name"]: t for t in client.tables()}
        spec = specs.get(table)
        if spec is None or spec["kind"] != "sparse":
            raise Error("INVALID_ARGUMENT" if spec else "NOT_FOUND",
                        f"Embedding needs a sparse table; the job's {table} is "
                        f"{spec['kind'] if spec else 'missing'}")
        self.width = spec["width"]
        self._pending = []

    def forward(self, ids):
        ids = torch.as_tensor(ids, dtype=torch.int64)
        unique, inverse = torch.unique(ids.reshape(-1), return_inverse=True)
        keys = unique.numpy()
        rows = torch.from_numpy(self.client.pull_rows(self.table, keys))
        rows.requires_grad_(True)
        self._pending.append((keys, rows))
        return rows[inverse].reshape(*ids.shape, self.width)

    def push(self):
        """Pushes the gradients of every forward since the last push."""
        for keys, rows in self._pending:
            if rows.grad is not None:
                self.client.push_rows(self.table, keys, rows.grad.contiguous().numpy())
        self._pending = []


class Embeddings(torch.nn.Module):
    """Several sparse tables as one module (one embedding table per
    categorical field): forward([ids per table]) returns one tensor of rows
    per table, pulled in one operation (one request per server for all
    tables); push(scale) sends every table's summed row gradients, times
    `scale`, in one operation."""

    def __init__(self, client, tables):
        super().__init__()
        self.client = client
        self.tables = list(tables)
        specs = {t["name"]: t for t in client.tables()}
        for table in self.tables:
            spec = specs.get(table)
            if spec is None or spec["kind"] != "sparse":
                raise Error("INVALID_ARGUMENT" if spec else "NOT_FOUND",
                            f"Embeddings needs sparse tables; the job's {table} is "
                            f"{spec['kind'] if spec else 'missing'}")
        self.widths = [specs[t]["width"] for t in self.tables]
        self._pending = []

    def forward(self, ids_per_table):
        if len(ids_per_table) != len(self.tables):
            raise Error("INVALID_ARGUMENT", f"{len(ids_per_table)} id tensors for "
                        f"{len(self.tables)} tables")
        uniques, inverses = [], []
        for ids in ids_per_table:
            ids = torch.as_tensor(ids, dtype=torch.int64)
            u, inv = torch.unique(ids.reshape(-1), return_inverse=True)
            uniques.append(u.numpy())
            inverses.append((inv, ids.shape))
        pulled = self.client.pull_rows_many(dict(zip(self.tables, uniques)))
        out, step = [], []
        for table, keys, (inv, shape), width in zip(self.tables, uniques, inverses, self.widths):
            rows = torch.from_numpy(pulled[table]).requires_grad_(True)
            step.append((table, keys, rows))
            out.append(rows[inv].reshape(*shape, width))
        self._pending.append(step)
        return out

    def push(self, scale=1.0):
        """Pushes the row gradients of every forward since the last push."""
        for step in self._pending:
            grads = {}
            for table, keys, rows in step:
                if rows.grad is not None:
                    g = rows.grad if scale == 1.0 else rows.grad * scale
                    grads[table] = (keys, g.contiguous().numpy())
            if grads:
                self.client.push_rows_many(grads)
        self._pending = []
