#!/usr/bin/env python3
"""yamllint, with deploy/kubernetes/.yamllint, on every YAML file of
deploy/kubernetes and on the job file each ConfigMap carries; and a planted
mistake (a duplicate key) that it must catch.

  k8s_yamllint_test.py --source-dir SRC
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import yaml


def lint(config, paths):
    r = subprocess.run(["yamllint", "--strict", "-f", "parsable", "-c", config] + paths,
                       capture_output=True, text=True)
    return r.returncode, (r.stdout + r.stderr).strip()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    if shutil.which("yamllint") is None:
        print("FAIL: yamllint is missing (tools/setup installs it)")
        return 1
    root = os.path.join(os.path.abspath(args.source_dir), "deploy/kubernetes")
    config = os.path.join(root, ".yamllint")
    failures = []
    rc, out = lint(config, [root])
    if rc != 0:
        failures.append(f"deploy/kubernetes:\n{out}")
    with tempfile.TemporaryDirectory() as tmp:
        embedded = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d != "node_modules"]
            for name in sorted(filenames):
                if not name.endswith(".yaml"):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    for i, doc in enumerate(yaml.safe_load_all(f)):
                        if doc and doc.get("kind") == "ConfigMap":
                            for key, text in (doc.get("data") or {}).items():
                                if key.endswith((".yaml", ".yml")):
                                    rel = os.path.relpath(path, root).replace("/", "_")
                                    out_path = os.path.join(tmp, f"{rel}-{i}-{key}")
                                    with open(out_path, "w", encoding="utf-8") as o:
                                        o.write(text)
                                    embedded.append(out_path)
        if not embedded:
            failures.append("no ConfigMap carries a job file")
        else:
            rc, out = lint(config, embedded)
            if rc != 0:
                failures.append(f"job files of the ConfigMaps:\n{out}")
        planted = os.path.join(tmp, "planted.yaml")
        with open(planted, "w", encoding="utf-8") as f:
            f.write("metadata:\n  name: a\n  name: b\n")
        rc, out = lint(config, [planted])
        if rc == 0 or "duplicate" not in out:
            failures.append(f"a duplicate key went unnoticed: {out}")
    for f in failures:
        print(f"FAIL: {f}")
    print(f"{len(failures)} failures; {len(embedded)} embedded job files linted")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
