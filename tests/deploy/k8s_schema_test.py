#!/usr/bin/env python3
"""Validates the Kubernetes manifests of deploy/kubernetes offline with
deploy/kubernetes/validate/validate.mjs (the Kubernetes API's published
schemas, no unknown fields, the JobSet's own schema), then plants one mistake
at a time in copies and checks that each is reported.

  k8s_schema_test.py --source-dir SRC

Needs node and the npm packages that tools/setup-deploy-check installs.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

# (file, text, replacement, words the report must contain)
PLANTED = [
    ("jobset.yaml", "  startupPolicy:\n", "  startupPolicys:\n", "startupPolicys"),
    ("jobset.yaml", "          podFailurePolicy:\n            rules:\n              # Evicted",
     "          podFailurePolicies:\n            rules:\n              # Evicted", "podFailurePolicies"),
    ("jobset.yaml", "onJobFailureReasons: [PodFailurePolicy]", "onJobFailureReasons: [PodFailurePolicyy]",
     "allowed values"),
    ("jobset.yaml", "targetReplicatedJobs: [workers]", "targetReplicatedJobs: [worker]", "worker"),
    ("jobset.yaml", "- name: PermanentExitCode", "- name: Permanent-Exit-Code", "pattern"),
    ("plain/workers.yaml", "completionMode: Indexed", "completionMode: Indexd", "allowed values"),
    ("plain/workers.yaml", "      restartPolicy: Never", "      restartPolicy: OnFailure", "restartPolicy: Never"),
    ("plain/coordinator.yaml", "- {name: grpc, containerPort: 7070}", '- {name: grpc, containerPort: "7070"}',
     "containerPort"),
    ("plain/servers.yaml", "  publishNotReadyAddresses: true", "  publishNotReadyAddress: true",
     "publishNotReadyAddress"),
    ("plain/servers.yaml", "      enableServiceLinks: false", "      enableServiceLinks: \"false\"",
     "enableServiceLinks"),
    ("plain/servers.yaml", "                  fieldPath: status.podIP", "                  fieldPat: status.podIP",
     "fieldPat"),
]


def manifests(root):
    out = [os.path.join(root, "jobset.yaml")]
    plain = os.path.join(root, "plain")
    out += sorted(os.path.join(plain, f) for f in os.listdir(plain) if f.endswith(".yaml"))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    root = os.path.join(os.path.abspath(args.source_dir), "deploy/kubernetes")
    validate = os.path.join(root, "validate", "validate.mjs")
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        print("FAIL: node is missing (tools/setup installs nodejs)")
        return 1
    if not os.path.isdir(os.path.join(root, "validate", "node_modules")):
        print("FAIL: deploy/kubernetes/validate/node_modules is missing: run tools/setup "
              "(tools/setup-deploy-check)")
        return 1
    failures = []
    r = subprocess.run([node, validate] + manifests(root), capture_output=True, text=True)
    print(r.stdout.strip())
    if r.returncode != 0:
        failures.append(f"the manifests do not validate:\n{r.stderr.strip()}")
    with tempfile.TemporaryDirectory() as tmp:
        planted = []
        for n, (rel, old, new, words) in enumerate(PLANTED):
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                text = f.read()
            if text.count(old) != 1:
                failures.append(f"planted mistake {n}: {old!r} is not once in {rel}; update the test")
                continue
            path = os.path.join(tmp, f"planted{n}-{os.path.basename(rel)}")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text.replace(old, new))
            planted.append((path, rel, new, words))
        r = subprocess.run([node, validate] + [p for p, *_ in planted], capture_output=True, text=True)
        if r.returncode == 0:
            failures.append("planted mistakes validated")
        for path, rel, new, words in planted:
            lines = [line for line in r.stderr.splitlines() if line.startswith(path)]
            if not any(words in line for line in lines):
                failures.append(f"{rel} with {new.strip()!r} not reported as expected ({words!r}): {lines}")
    for f in failures:
        print(f"FAIL: {f}")
    print(f"{len(failures)} failures; {len(PLANTED)} planted mistakes")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
