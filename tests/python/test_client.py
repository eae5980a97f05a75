"""The cairn Python package against real daemons: dense and sparse round
trips with the exact optimizer arithmetic, every error path raising
cairn.Error with its code and a message naming what was wrong, the GIL
released while a call waits, and cairn.torch on a small model."""
import threading
import time

import numpy as np
import pytest

import cairn

JOB = """
cluster:
  coordinator: "127.0.0.1:1"
  servers: 1
  workers: {workers}
  partitions: 4
  lease_timeout: 5s
  heartbeat_interval: 200ms
  startup_timeout: 30s
consistency:
  mode: {mode}
tables:
  - name: w
    kind: dense
    shape: [3, 4]
    optimizer: {{type: sgd, learning_rate: 1.0}}
    init: {{type: zeros}}
    aggregation: sum
  - name: e
    kind: sparse
    width: 2
    optimizer: {{type: sgd, learning_rate: 0.5}}
    init: {{type: zeros}}
    aggregation: sum
"""


def job(workers=1, mode="asp"):
    return JOB.format(workers=workers, mode=mode)


def connect_workers(c, n, **options):
    """n workers connected at once (the start-up barrier waits for all)."""
    clients = [None] * n

    def connect(i):
        clients[i] = cairn.connect(c.address, worker_id=i, **options)

    threads = [threading.Thread(target=connect, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return clients


def test_dense_round_trip_exact_values(cluster_factory):
    c = cluster_factory(job())
    with cairn.connect(c.address, worker_id=0) as client:
        assert client.worker_id == 0
        names = [t["name"] for t in client.tables()]
        assert names == ["w", "e"]
        assert client.tables()[0]["shape"] == [3, 4]
        w = client.pull("w")
        assert w.shape == (3, 4) and w.dtype == np.float32
        assert np.all(w == 0)
        grad = np.arange(12, dtype=np.float32).reshape(3, 4)
        client.push("w", grad)
        client.clock()
        # SGD, learning rate 1, from zeros: w = -grad, bit for bit.
        assert np.array_equal(client.pull("w"), -grad)
        # Into a caller's array, in place.
        out = np.full((3, 4), 7, dtype=np.float32)
        client.pull_dense({"w": out})
        assert np.array_equal(out, -grad)
        assert client.iteration == 1


def test_sparse_round_trip_and_int64_ids(cluster_factory):
    c = cluster_factory(job())
    with cairn.connect(c.address, worker_id=0) as client:
        keys = np.array([5, -1, 5, 2**40], dtype=np.int64)  # -1: its uint64 bit pattern
        grads = np.ones((4, 2), dtype=np.float32)
        client.push_rows("e", keys, grads)
        rows = client.pull_rows("e", np.array([5, -1, 2**40, 9], dtype=np.int64))
        # Key 5 twice: its gradients are summed (2), times the learning rate 0.5.
        assert rows.tolist() == [[-1.0, -1.0], [-0.5, -0.5], [-0.5, -0.5], [0.0, 0.0]]


def test_torch_tensors_in_place(cluster_factory):
    torch = pytest.importorskip("torch")
    c = cluster_factory(job())
    with cairn.connect(c.address, worker_id=0) as client:
        client.push("w", torch.full((3, 4), 2.0))
        out = torch.zeros(3, 4)
        client.pull_dense({"w": out})  # written in place through the shared memory
        assert torch.equal(out, torch.full((3, 4), -2.0))


def test_errors_raise_cairn_error_with_code_and_message(cluster_factory):
    c = cluster_factory(job())
    with cairn.connect(c.address, worker_id=0) as client:
        with pytest.raises(cairn.Error) as e:
            client.pull("nope")
        assert e.value.code == "NOT_FOUND"
        assert "no table named nope" in e.value.message
        with pytest.raises(cairn.Error) as e:
            client.push("w", np.zeros((4, 3), dtype=np.float32))
        assert e.value.code == "INVALID_ARGUMENT"
        assert "shape mismatch" in e.value.message and "[3,4]" in e.value.message
        with pytest.raises(cairn.Error) as e:
            client.push("w", np.zeros((3, 4), dtype=np.float64))
        assert e.value.code == "INVALID_ARGUMENT"
        assert "must be float32" in e.value.message
        with pytest.raises(cairn.Error) as e:
            client.pull_dense({"w": np.zeros(5, dtype=np.float32)})
        assert e.value.code == "INVALID_ARGUMENT" and "holds 5 floats, expected 12" in str(e.value)
        with pytest.raises(cairn.Error) as e:
            client.push_rows("e", np.array([1], dtype=np.int32), np.zeros((1, 2), np.float32))
        assert "keys must be int64 or uint64" in e.value.message
        with pytest.raises(cairn.Error) as e:
            client.pull_rows("w", np.array([1], dtype=np.int64))
        assert "table w is dense" in e.value.message
        with pytest.raises(cairn.Error) as e:
            client.pull_dense({"w": np.zeros((4, 3), dtype=np.float32).T})  # not C-contiguous
        assert "C-contiguous" in e.value.message
        # Nothing above changed the table.
        assert np.all(client.pull("w") == 0)


def test_busy_poll_out_of_range_raises_invalid_argument():
    for bad in (-0.001, 0.5):
        with pytest.raises(cairn.Error) as e:
            cairn.connect("127.0.0.1:1", worker_id=0, busy_poll=bad)
        assert e.value.code == "INVALID_ARGUMENT"
        assert "busy_poll" in e.value.message


def test_dead_coordinator_raises_unavailable(cluster_factory):
    c = cluster_factory(job())
    address = c.address
    c.kill_coordinator()
    start = time.monotonic()
    with pytest.raises(cairn.Error) as e:
        cairn.connect(address, worker_id=0, connect_timeout=2.0)
    assert e.value.code == "UNAVAILABLE"
    assert address in e.value.message
    assert time.monotonic() - start < 20


def test_the_gil_is_released_while_a_call_waits(cluster_factory):
    # BSP with 2 workers: worker 0's pull for iteration 1 waits for worker 1's
    # clock. Another Python thread counts meanwhile; it can only run if the
    # waiting call released the GIL.
    c = cluster_factory(job(workers=2, mode="bsp"))
    a, b = connect_workers(c, 2)
    a.push("w", np.ones((3, 4), np.float32))
    a.clock()
    ticks = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1

    counter = threading.Thread(target=count)
    counter.start()
    pending = a.pull_dense_async({"w": np.empty((3, 4), np.float32)})
    time.sleep(0.5)
    assert not pending.done()  # waiting at the barrier for worker 1
    before = ticks[0]
    waiter = threading.Thread(target=pending.result)
    waiter.start()
    time.sleep(0.3)
    assert ticks[0] > before + 1000  # the counter ran while result() waited
    b.push("w", np.ones((3, 4), np.float32))
    b.clock()
    waiter.join(timeout=10)
    stop.set()
    counter.join()
    assert not waiter.is_alive()
    out = a.pull("w")
    assert np.all(out == -2.0)
    a.finish()
    b.finish()


def test_push_and_clock_ends_the_iteration_with_the_push(cluster_factory):
    # BSP with 2 workers and one server: each push_and_clock is one request
    # that carries the worker's tick. Iteration 1's pulls see both workers'
    # dense and row gradients, summed, exactly once.
    c = cluster_factory(job(workers=2, mode="bsp"))
    clients = connect_workers(c, 2)
    keys = np.array([5, -7], dtype=np.int64)
    rows = np.array([[1, 2], [3, 4]], dtype=np.float32)
    for i, client in enumerate(clients):
        client.push_and_clock(dense={"w": np.full((3, 4), i + 1, np.float32)},
                              rows={"e": (keys, rows)})
        assert client.iteration == 1
    for client in clients:
        assert np.all(client.pull("w") == -3.0)   # lr 1: -(1 + 2)
        assert np.array_equal(client.pull_rows("e", keys), -rows)  # lr 0.5: -0.5 * 2 * rows
    with pytest.raises(cairn.Error) as e:
        clients[0].push_and_clock(dense={"w": np.ones((2, 2), np.float32)})
    assert e.value.code == "INVALID_ARGUMENT"
    assert "w" in e.value.message
    for client in clients:
        client.finish()


def test_push_clock_and_pull_runs_meanwhile_once_while_the_calls_are_in_flight(cluster_factory):
    # One worker, BSP: `meanwhile` runs once, before the pull's answer is
    # taken into the array; the pull then reads the push. An exception it
    # raises comes out after the call, whose push was applied all the same;
    # a refused call does not run it.
    c = cluster_factory(job(workers=1, mode="bsp"))
    (client,) = connect_workers(c, 1)
    out = np.zeros((3, 4), np.float32)
    seen = []
    assert client.push_clock_and_pull(dense={"w": np.full((3, 4), 2, np.float32)},
                                      pull_dense={"w": out},
                                      meanwhile=lambda: seen.append(out.copy()))
    assert len(seen) == 1
    assert np.all(seen[0] == 0.0)
    assert client.iteration == 1
    assert np.all(out == -2.0)  # lr 1

    def fails():
        raise ValueError("from meanwhile")

    with pytest.raises(ValueError, match="from meanwhile"):
        client.push_clock_and_pull(dense={"w": np.ones((3, 4), np.float32)},
                                   pull_dense={"w": out}, meanwhile=fails)
    assert client.iteration == 2
    client.pull_dense({"w": out})
    assert np.all(out == -3.0)  # the second push was applied

    with pytest.raises(TypeError, match="meanwhile"):
        client.push_clock_and_pull(dense={"w": np.ones((3, 4), np.float32)}, meanwhile=3)
    ran = []
    with pytest.raises(cairn.Error) as e:
        client.push_clock_and_pull(pull_dense={"w": np.zeros((2, 2), np.float32)},
                                   meanwhile=lambda: ran.append(1))
    assert e.value.code == "INVALID_ARGUMENT"
    assert ran == []
    assert client.iteration == 2
    client.finish()


@pytest.mark.parametrize("busy_poll", [0.0, 0.002])
def test_push_clock_and_pull_reads_the_next_iteration_in_the_same_round_trip(cluster_factory,
                                                                             busy_poll):
    # BSP with 2 workers: each worker's pull of iteration 1 goes out with its
    # push and is answered once both pushes closed iteration 0, so both read
    # the sum of both workers' gradients, whichever pushed first. The same
    # with waits that poll before they sleep (busy_poll).
    c = cluster_factory(job(workers=2, mode="bsp"))
    clients = connect_workers(c, 2, busy_poll=busy_poll)
    outs = [np.zeros((3, 4), np.float32) for _ in clients]
    results = [None, None]

    def step(i):
        results[i] = clients[i].push_clock_and_pull(
            dense={"w": np.full((3, 4), i + 1, np.float32)}, pull_dense={"w": outs[i]})

    threads = [threading.Thread(target=step, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == [True, True]
    for client, out in zip(clients, outs):
        assert client.iteration == 1
        assert np.all(out == -3.0)   # lr 1: -(1 + 2)
    with pytest.raises(cairn.Error) as e:
        clients[0].push_clock_and_pull(pull_dense={"w": np.zeros((2, 2), np.float32)})
    assert e.value.code == "INVALID_ARGUMENT"
    assert "w" in e.value.message
    assert clients[0].iteration == 1  # refused before anything was sent
    for client in clients:
        client.finish()


def test_torch_model_and_embedding(cluster_factory):
    torch = pytest.importorskip("torch")
    import cairn.torch as ct

    yaml = job() + """  - name: net.fc.weight
    kind: dense
    shape: [2, 3]
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: zeros}
  - name: net.fc.bias
    kind: dense
    shape: [2]
    optimizer: {type: sgd, learning_rate: 1.0}
    init: {type: zeros}
"""
    c = cluster_factory(yaml)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(3, 2)

        def forward(self, x):
            return self.fc(x)

    with cairn.connect(c.address, worker_id=0) as client:
        model = ct.ParameterServerModel(Net(), client, prefix="net.")
        model.pull()
        assert torch.all(model.module.fc.weight == 0)  # the servers' values, not torch's init
        x = torch.tensor([[1.0, 2.0, 3.0]])
        model(x).sum().backward()  # d/dW = x for each output row, d/db = 1
        ran = []
        model.push(meanwhile=lambda: ran.append(1))  # e.g. the next batch, gathered meanwhile
        assert ran == [1]
        model.pull()
        assert torch.equal(model.module.fc.weight.data, -x.repeat(2, 1))
        assert torch.equal(model.module.fc.bias.data, torch.full((2,), -1.0))
        assert client.iteration == 1
        # Without the clock, `meanwhile` runs while the push alone is in flight.
        model(x).sum().backward()
        model.push(clock=False, meanwhile=lambda: ran.append(2))
        assert ran == [1, 2]
        client.clock()
        model.pull()
        assert torch.equal(model.module.fc.weight.data, -2 * x.repeat(2, 1))
        assert client.iteration == 2
        # A model whose shapes differ from the job's tables is refused.
        with pytest.raises(cairn.Error) as e:
            ct.ParameterServerModel(torch.nn.Linear(4, 2), client, prefix="net.fc.")
        assert e.value.code == "INVALID_ARGUMENT" and "[2, 3]" in e.value.message

        emb = ct.Embedding(client, "e")
        out = emb(torch.tensor([[3, 4], [3, 3]]))
        assert out.shape == (2, 2, 2)
        out.sum().backward()
        emb.push()
        # id 3 appeared 3 times, id 4 once; learning rate 0.5.
        rows = client.pull_rows("e", np.array([3, 4], np.int64))
        assert rows.tolist() == [[-1.5, -1.5], [-0.5, -0.5]]
        assert "name: net.fc.weight" in ct.tables_yaml(Net(), prefix="net.")


def test_pytorch_example_trains_through_cairn_launch(tmp_path):
    pytest.importorskip("torch")
    import json
    import os
    import subprocess
    from conftest import BUILD
    source = os.path.join(os.path.dirname(__file__), "../..")
    summary = tmp_path / "summary.json"
    env = dict(os.environ, CAIRN_PYTHONPATH=os.path.join(BUILD, "python"))
    r = subprocess.run(
        [os.path.join(BUILD, "bin", "cairn-launch"),
         os.path.join(source, "examples/fashion-mnist.yaml"),
         "--worker-command", os.path.join(source, "examples/pytorch/fashion_mnist_mlp.py"),
         "--set", "training.max_steps=60", "--set", "cluster.servers=1",
         "--workdir", str(tmp_path / "job"), "--summary", str(summary)],
        capture_output=True, text=True, timeout=240, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads(summary.read_text())
    assert s["workers"] == 2 and s["steps"] == 60
    # 60 BSP steps of batch 64 on 2 workers: far above chance (0.1).
    assert s["test_accuracy"] > 0.5


def test_pytorch_ctr_example_matches_cairn_worker(tmp_path):
    # The same job, data and steps through the PyTorch CTR example
    # (cairn.torch.Embeddings on 26 sparse tables) and through cairn-worker:
    # the test AUCs agree (the servers initialize and update both alike;
    # only the shuffle and float summation order differ).
    pytest.importorskip("torch")
    import json
    import os
    import subprocess
    from conftest import BUILD
    source = os.path.join(os.path.dirname(__file__), "../..")
    data = tmp_path / "data"
    subprocess.run([os.path.join(source, "tools/ctr-generate"), "--out", str(data),
                    "--examples", "40000", "--seed", "1"], check=True, capture_output=True)
    env = dict(os.environ, CAIRN_PYTHONPATH=os.path.join(BUILD, "python"))
    aucs = {}
    for name, extra in (("python", ["--worker-command",
                                    os.path.join(source, "examples/pytorch/ctr.py")]),
                        ("cpp", [])):
        summary = tmp_path / f"{name}.json"
        r = subprocess.run(
            [os.path.join(BUILD, "bin", "cairn-launch"), os.path.join(source, "examples/ctr.yaml"),
             "--set", f"training.data_dir={data}", "--set", "training.epochs=2",
             "--workdir", str(tmp_path / name), "--summary", str(summary)] + extra,
            capture_output=True, text=True, timeout=240, env=env)
        assert r.returncode == 0, r.stderr[-3000:]
        s = json.loads(summary.read_text())
        assert s["steps"] == 140
        aucs[name] = s["per_worker"][0]["test_auc"]
    assert aucs["python"] > 0.6
    assert abs(aucs["python"] - aucs["cpp"]) < 0.02, aucs
