#!/usr/bin/python3
"""The click-through-rate model of examples/ctr.yaml in plain PyTorch: 26
embedding tables (cairn.torch.Embeddings on the job's sparse tables ctr.c1 ..
ctr.c26) and an MLP head (cairn.torch.ParameterServerModel on ctr.fc<i>),
trained as a worker of a Cairn job on Criteo-format data (tools/ctr-generate).

    tools/ctr-generate --out build/ctr-data --examples 200000
    build/bin/cairn-launch examples/ctr.yaml --set training.data_dir=$PWD/build/ctr-data \\
        --worker-command examples/pytorch/ctr.py

As cairn-worker does: an example's 26 rows, then log(1 + x) of its 13
integer features (0 when missing or not positive), go into the head; the loss
is sigmoid cross-entropy; each worker takes its share of a shuffled epoch;
row gradients are scaled by 1 / workers (the tables sum them; the head's
are averaged). Reports test AUC and log loss in the summary cairn-launch
reads.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
import yaml

from fashion_mnist_mlp import MLP  # the same stack of layers, fc0 .. fc<n-1>

HERE = os.path.dirname(os.path.abspath(__file__))
FIELDS, INTEGERS = 26, 13
MISSING = -1  # the all-ones id of a missing value, as int64


def read_criteo(path):
    """(labels [n], integer features [n, 13] as log1p, ids [n, 26] int64)."""
    labels, ints, ids = [], [], []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            cols = line.rstrip("\r\n").split("\t")
            if len(cols) != 1 + INTEGERS + FIELDS:
                sys.exit(f"{path}:{number}: {len(cols)} fields, expected 40")
            labels.append(float(cols[0]))
            ints.append([math.log1p(int(c)) if c and int(c) > 0 else 0.0
                         for c in cols[1:1 + INTEGERS]])
            ids.append([int(c, 16) if c else MISSING for c in cols[1 + INTEGERS:]])
    return (torch.tensor(labels), torch.tensor(ints, dtype=torch.float32),
            torch.tensor(ids, dtype=torch.int64))


def roc_auc(labels, scores):
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    # Ties share their mean rank.
    sorted_scores = scores[order]
    start = 0
    for end in range(1, len(scores) + 1):
        if end == len(scores) or sorted_scores[end] != sorted_scores[start]:
            ranks[order[start:end]] = (start + 1 + end) / 2
            start = end
    positives = labels.sum()
    negatives = len(labels) - positives
    return (ranks[labels == 1].sum() - positives * (positives + 1) / 2) / (positives * negatives)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", required=True)
    p.add_argument("--coordinator", default="127.0.0.1:7070")
    p.add_argument("--worker-id", type=int, default=-1)
    p.add_argument("--summary")
    p.add_argument("--set", action="append", default=[])
    args, _ = p.parse_known_args()
    sys.path.insert(0, os.environ.get("CAIRN_PYTHONPATH", os.path.join(HERE, "../../build/python")))
    import cairn
    import cairn.torch

    with open(args.config) as f:
        job = yaml.safe_load(f)
    t = dict(job.get("training", {}))
    workers = job.get("cluster", {}).get("workers", 1)
    for override in args.set:
        key, _, value = override.partition("=")
        if key.startswith("training."):
            t[key[9:]] = yaml.safe_load(value)
        if key == "cluster.workers":
            workers = int(value)
    layers, batch = t.get("layers", [221, 64, 1]), t.get("batch_size", 256)
    epochs, max_steps, seed = t.get("epochs", 1), t.get("max_steps", 0), t.get("seed", 1)
    torch.set_num_threads(int(os.environ.get("OPENBLAS_NUM_THREADS", "1")))
    y_train, x_train, ids_train = read_criteo(os.path.join(t["data_dir"], "train.txt"))
    y_test, x_test, ids_test = read_criteo(os.path.join(t["data_dir"], "test.txt"))

    client = cairn.connect(args.coordinator, worker_id=args.worker_id)
    rank = client.worker_id
    tables = [f"ctr.c{i + 1}" for i in range(FIELDS)]
    embeddings = cairn.torch.Embeddings(client, tables)
    head = cairn.torch.ParameterServerModel(MLP(layers), client, prefix="ctr.")

    def logits(x, ids):
        rows = embeddings([ids[:, f] for f in range(FIELDS)])
        return head(torch.cat(rows + [x], dim=1)).squeeze(-1)

    steps_per_epoch = len(y_train) // (workers * batch)
    total = steps_per_epoch * epochs
    if max_steps:
        total = min(total, max_steps)
    start, step, epoch, losses = time.monotonic(), 0, 0, []
    while step < total:
        mine = np.random.default_rng([seed, epoch]).permutation(len(y_train))[rank::workers]
        for s in range(steps_per_epoch):
            if step >= total:
                break
            idx = torch.from_numpy(mine[s * batch:(s + 1) * batch])
            head.pull()
            loss = F.binary_cross_entropy_with_logits(logits(x_train[idx], ids_train[idx]),
                                                      y_train[idx])
            loss.backward()
            embeddings.push(scale=1.0 / workers)
            head.push()  # the head's gradients, then the clock
            losses.append(loss.item())
            step += 1
        epoch += 1
    seconds = time.monotonic() - start
    head.pull()
    scores = []
    with torch.no_grad():
        for b in range(0, len(y_test), 4096):
            scores.append(torch.sigmoid(logits(x_test[b:b + 4096], ids_test[b:b + 4096])))
    embeddings._pending = []  # evaluation pushes nothing
    scores = torch.cat(scores).numpy().astype(np.float64)
    labels = y_test.numpy()
    eps = 1e-7
    log_loss = float(-np.mean(labels * np.log(scores + eps) + (1 - labels) * np.log(1 - scores + eps)))
    auc = float(roc_auc(labels, scores))
    client.finish()
    summary = {"mode": "cluster", "device": "cpu (torch)", "worker": rank, "workers": workers,
               "batch_size": batch, "test_accuracy": float(((scores > 0.5) == labels).mean()),
               "test_loss": log_loss, "test_auc": auc,
               "train_loss": float(np.mean(losses[-100:])) if losses else 0.0,
               "examples_per_second": step * batch / seconds if seconds > 0 else 0.0,
               "examples": step * batch, "wall_seconds": seconds, "train_seconds": seconds,
               "epochs": epoch, "steps": step}
    print(f"worker {rank}: {step} steps, test AUC {auc:.4f}, log loss {log_loss:.4f}, "
          f"{summary['examples_per_second']:.0f} examples/s", file=sys.stderr, flush=True)
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump(summary, f)


if __name__ == "__main__":
    main()
