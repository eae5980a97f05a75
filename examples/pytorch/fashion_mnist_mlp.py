#!/usr/bin/python3
"""The Fashion-MNIST MLP of examples/fashion-mnist.yaml in plain PyTorch
(torch autograd, no Cairn kernels), training as a worker of a Cairn job.

cairn-launch runs it in place of cairn-worker, with the same arguments:

    build/bin/cairn-launch examples/fashion-mnist.yaml \\
        --worker-command examples/pytorch/fashion_mnist_mlp.py

It reads the job's YAML for the model and training settings (training.layers,
batch_size, epochs, max_steps, seed, data_dir; --set overrides them), takes
the same share of the data per step as cairn-worker (an epoch's shuffle dealt
round-robin to the workers), and writes the summary JSON cairn-launch reads.
The model's parameters live in the job's tables mlp.fc<i>.weight and
mlp.fc<i>.bias; the servers initialize and update them (the job's optimizer).
"""
import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(data_dir, split):
    images = read_idx(os.path.join(data_dir, f"{split}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, f"{split}-labels-idx1-ubyte.gz"))
    x = torch.from_numpy(images.reshape(len(images), -1).astype(np.float32) / 255.0)
    return x, torch.from_numpy(labels.astype(np.int64))


class MLP(torch.nn.Module):
    """fc0 ... fc<n-1> with ReLU between, as cairn-worker's MLP."""

    def __init__(self, layers):
        super().__init__()
        for i in range(len(layers) - 1):
            self.add_module(f"fc{i}", torch.nn.Linear(layers[i], layers[i + 1]))
        self.depth = len(layers) - 1

    def forward(self, x):
        for i in range(self.depth):
            x = getattr(self, f"fc{i}")(x)
            if i + 1 < self.depth:
                x = F.relu(x)
        return x


def settings(args):
    with open(args.config) as f:
        job = yaml.safe_load(f)
    t = {"layers": [784, 256, 128, 10], "batch_size": 64, "epochs": 5, "max_steps": 0,
         "seed": 1, "data_dir": "/usr/share/datasets/fashion-mnist"}
    t.update({k: v for k, v in job.get("training", {}).items() if k in t})
    workers = job.get("cluster", {}).get("workers", 1)
    for override in args.set:
        key, _, value = override.partition("=")
        if key.startswith("training.") and key[9:] in t:
            t[key[9:]] = yaml.safe_load(value)
        if key == "cluster.workers":
            workers = int(value)
    if args.data_dir:
        t["data_dir"] = args.data_dir
    return t, workers


def epoch_order(n, seed, epoch):
    return np.random.default_rng([seed, epoch]).permutation(n)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", required=True)
    p.add_argument("--coordinator", default="127.0.0.1:7070")
    p.add_argument("--worker-id", type=int, default=-1)
    p.add_argument("--summary")
    p.add_argument("--data-dir")
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--tls", action="store_true")  # cairn-launch --tls
    p.add_argument("--tls-ca")
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    args, _ = p.parse_known_args()  # cairn-launch's other flags (--metrics-port, ...)
    sys.path.insert(0, os.environ.get("CAIRN_PYTHONPATH", os.path.join(HERE, "../../build/python")))
    import cairn
    import cairn.torch
    if args.tls:
        cairn.use_tls(args.tls_ca, args.tls_cert.replace("{role}", "worker"),
                      args.tls_key.replace("{role}", "worker"))
    t, workers = settings(args)
    torch.set_num_threads(int(os.environ.get("OPENBLAS_NUM_THREADS", "1")))
    x_train, y_train = load(t["data_dir"], "train")
    x_test, y_test = load(t["data_dir"], "t10k")

    client = cairn.connect(args.coordinator, worker_id=args.worker_id)
    rank = client.worker_id
    model = cairn.torch.ParameterServerModel(MLP(t["layers"]), client, prefix="mlp.")
    batch = t["batch_size"]
    steps_per_epoch = len(x_train) // (workers * batch)
    total_steps = steps_per_epoch * t["epochs"]
    if t["max_steps"]:
        total_steps = min(total_steps, t["max_steps"])
    print(f"worker {rank}: {total_steps} steps of batch {batch}, {workers} workers",
          file=sys.stderr, flush=True)
    # Each step's batch is gathered into these two buffers: no allocation
    # per step, and no copy of the whole epoch's share (94 MB for one of two
    # workers) at each epoch's start.
    x_batch = torch.empty(batch, x_train.shape[1])
    y_batch = torch.empty(batch, dtype=y_train.dtype)
    held = None  # the step of the epoch whose rows x_batch and y_batch hold

    def gather(s):
        nonlocal held
        rows = mine[s * batch:(s + 1) * batch]
        torch.index_select(x_train, 0, rows, out=x_batch)
        torch.index_select(y_train, 0, rows, out=y_batch)
        held = s

    start = time.monotonic()
    step, losses, epochs_run = 0, [], 0
    while step < total_steps:
        order = epoch_order(len(x_train), t["seed"], epochs_run)
        mine = torch.from_numpy(order[rank::workers])
        held = None
        for s in range(steps_per_epoch):
            if step >= total_steps:
                break
            if held != s:
                gather(s)
            model.pull()
            loss = F.cross_entropy(model(x_batch), y_batch)
            loss.backward()
            # Gradients to the servers, then the clock; the next batch is
            # gathered while they are on their way (its rows are not needed
            # by the push, and this step's are no longer).
            last = s + 1 == steps_per_epoch or step + 1 == total_steps
            model.push(meanwhile=None if last else lambda: gather(s + 1))
            losses.append(loss.item())
            step += 1
        epochs_run += 1
    train_seconds = time.monotonic() - start
    model.pull()
    with torch.no_grad():
        logits = model(x_test)
        test_loss = F.cross_entropy(logits, y_test).item()
        accuracy = (logits.argmax(1) == y_test).float().mean().item()
    client.finish()
    summary = {
        "mode": "cluster", "device": "cpu (torch)", "worker": rank, "workers": workers,
        "batch_size": batch, "test_accuracy": accuracy, "test_loss": test_loss,
        "train_loss": float(np.mean(losses[-steps_per_epoch:])) if losses else 0.0,
        "examples_per_second": step * batch / train_seconds if train_seconds > 0 else 0.0,
        "examples": step * batch, "wall_seconds": time.monotonic() - start,
        "train_seconds": train_seconds, "epochs": epochs_run, "steps": step,
    }
    print(f"worker {rank}: done: {step} steps, test_accuracy {accuracy:.4f}, "
          f"{summary['examples_per_second']:.0f} examples/s", file=sys.stderr, flush=True)
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump(summary, f)


if __name__ == "__main__":
    main()
