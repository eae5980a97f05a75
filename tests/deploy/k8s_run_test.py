#!/usr/bin/env python3
"""Runs the command lines of a Kubernetes recipe (deploy/kubernetes) against
the real binaries, without a cluster, and checks that the job trains and ends
as the cluster contract says.

  k8s_run_test.py --bin-dir BUILD/bin --source-dir SRC jobset|plain

Each pod of the recipe (k8s_pods.py) runs exactly its container's command and
args, with the environment Kubernetes would give it (downward API values,
JOB_COMPLETION_INDEX, KUBERNETES_SERVICE_HOST, HOSTNAME), in a network and UTS
namespace of its own: its own IP (10.244.0.x, in a private network namespace
this test makes for itself), its own hostname and the ports the manifest
names. Volumes are local folders; the
ConfigMap's job file is written there, with its mount paths mapped to them and
a short run set (training.epochs 1, training.max_steps 40).

Pods start the way their controllers start them: a JobSet with startupPolicy
InOrder starts a replicated job once every pod of the one before is ready
(its startupProbe and readinessProbe pass: grpc.health.v1 SERVING), a
StatefulSet with OrderedReady one pod after the other, everything else at
once, here 0.4 s apart and the highest index of a group first (so an id taken
from the order of registration rather than the pod's index is caught). The test then checks, and reports every failure it finds:
  - each daemon's probes pass, and its /metrics answers on the
    prometheus.io/port of its pod;
  - the coordinator (cairnctl status, through the coordinator's DNS name)
    sees each server under the id of its pod's index at its pod IP, and each
    worker under its pod's index;
  - every worker trains training.max_steps steps and exits 0;
  - with cluster.exit_when_done true, servers and coordinator then exit 0 by
    themselves, the coordinator last; with false, they stay up and exit 0 on
    SIGTERM within terminationGracePeriodSeconds.
Exit 0: passed; 1: failed (the run's folder is kept and named); 77: this
machine permits no private network namespace (skipped).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k8s_pods  # noqa: E402
from k8s_pods import ManifestError  # noqa: E402

RECIPES = {
    "jobset": ["deploy/kubernetes/jobset.yaml"],
    "plain": ["deploy/kubernetes/plain"],
}
MAX_STEPS = 40
READY_TIMEOUT = 20.0      # seconds a pod gets to pass its probes here
START_GAP = 0.4           # seconds between two pod starts
RUN_TIMEOUT = 120.0       # seconds from the first start to the workers' end
def manifest_files(source_dir, recipe):
    files = []
    for rel in RECIPES[recipe]:
        path = os.path.join(source_dir, rel)
        if os.path.isdir(path):
            files += sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith((".yaml", ".yml")))
        else:
            files.append(path)
    return files


def listen_port(argv):
    for i, a in enumerate(argv):
        if a == "--listen" and i + 1 < len(argv):
            return int(argv[i + 1].rsplit(":", 1)[1])
        if a.startswith("--listen="):
            return int(a.rsplit(":", 1)[1])
    return None


class Run:
    def __init__(self, args):
        self.args = args
        self.failures = []
        self.procs = {}         # pod name -> Popen
        self.exit_time = {}     # pod name -> monotonic time of exit
        self.ready = set()
        self.logs = {}
        self.aborted = False

    def fail(self, message):
        self.failures.append(message)
        print(f"{'failure' if self.args.expect_failure else 'FAIL'}: {message}", flush=True)

    def note(self, message):
        print(f"[k8s-run] {message}", flush=True)

    # -- setting up ----------------------------------------------------------

    def edit_configmap(self, name, data):
        """The short run: one epoch, MAX_STEPS steps."""
        data = dict(data)
        if "job.yaml" in data:
            settings = k8s_pods.job_yaml_settings(data["job.yaml"])
            training = settings.setdefault("training", {})
            training["epochs"] = 1
            training["max_steps"] = MAX_STEPS
            self.settings = settings
            data["job.yaml"] = k8s_pods.yaml.safe_dump(settings, sort_keys=False)
        return data

    def prepare(self):
        files = ([os.path.abspath(f) for f in self.args.manifest] if self.args.manifest
                 else manifest_files(self.args.source_dir, self.args.recipe))
        self.settings = None
        self.workdir = tempfile.mkdtemp(prefix=f"k8s-{self.args.recipe or 'run'}-")
        if self.args.plant:
            files = self.plant(files)
        self.objects = k8s_pods.load_objects(files)
        self.pods = k8s_pods.expand_pods(self.objects)
        self.volumes = k8s_pods.Volumes(os.path.join(self.workdir, "volumes"), self.objects, self.pods,
                                        edit_configmap=self.edit_configmap)
        if self.settings is None:
            raise ManifestError("no ConfigMap with a job.yaml is mounted by the pods")
        self.net = k8s_pods.PodNetwork(self.workdir)
        for pod in self.pods:
            self.net.add_pod(pod)
        self.net.write_dns(k8s_pods.dns_names(self.objects, self.pods))
        base_env = {
            "PATH": f"{self.args.bin_dir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "LANG": "C.UTF-8",
        }
        self.commands = {}
        for pod in self.pods:
            containers = pod.containers()
            if len(containers) != 1:
                raise ManifestError(f"{pod.name}: {len(containers)} containers; the run models one")
            c = containers[0]
            env = k8s_pods.container_env(pod, c, self.objects, self.volumes, base_env)
            argv = k8s_pods.container_argv(pod, c, env, self.volumes, self.args.bin_dir)
            self.commands[pod.name] = (c, env, argv)
            shown = " ".join(f"{k}={v}" for k, v in sorted(env.items())
                             if k.startswith(("CAIRN_", "JOB_COMPLETION_INDEX")))
            self.note(f"pod {pod.name} ip {pod.ip} host {pod.hostname}: {shown} "
                      f"{' '.join([os.path.basename(argv[0])] + argv[1:])}")

    def plant(self, files):
        """Copies of `files` with each --plant OLD=>NEW made (OLD must occur
        exactly once in all of them)."""
        texts = {}
        for path in files:
            with open(path, encoding="utf-8") as f:
                texts[path] = f.read()
        for change in self.args.plant:
            old, sep, new = change.partition("=>")
            hits = [p for p, t in texts.items() if old in t]
            if not sep or len(hits) != 1 or texts[hits[0]].count(old) != 1:
                raise ManifestError(f"--plant {change!r}: the text must occur once in the manifests")
            texts[hits[0]] = texts[hits[0]].replace(old, new)
            self.note(f"planted in {os.path.basename(hits[0])}: {old!r} -> {new!r}")
        out = []
        folder = os.path.join(self.workdir, "manifests")
        os.makedirs(folder)
        for path, text in texts.items():
            copy_path = os.path.join(folder, os.path.basename(path))
            with open(copy_path, "w", encoding="utf-8") as f:
                f.write(text)
            out.append(copy_path)
        return out

    # -- running -------------------------------------------------------------

    def start(self, pod):
        c, env, argv = self.commands[pod.name]
        poddir = os.path.join(self.workdir, "pods", pod.name)
        os.makedirs(poddir, exist_ok=True)
        log_path = os.path.join(self.workdir, "logs", f"{pod.name}.log")
        os.makedirs(os.path.dirname(log_path), exist_ok=True)
        self.logs[pod.name] = log_path
        log = open(log_path, "w", encoding="utf-8")
        self.procs[pod.name] = subprocess.Popen(
            k8s_pods.DIE_WITH_PARENT + self.net.enter_prefix(pod) + argv, env=env, cwd=poddir,
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        log.close()
        pod.started = time.monotonic()
        pod.probe_state = {"startup": "startupProbe" not in c, "detail": "", "health_missing": False}
        self.note(f"started {pod.name}")

    def poll_exits(self):
        """Records exits; False once a pod failed (the run stops there: its
        controller would start it again, which is not modelled)."""
        ok = True
        for name, proc in self.procs.items():
            if name not in self.exit_time and proc.poll() is not None:
                self.exit_time[name] = time.monotonic()
                self.note(f"{name}: {k8s_pods.describe_exit(proc.returncode)}")
                if proc.returncode != 0:
                    self.fail(f"{name}: {k8s_pods.describe_exit(proc.returncode)} while the job ran")
                    ok = False
        return ok

    def check_ready(self, pod):
        """Runs the pod's probes once; True once it counts as ready."""
        c = self.commands[pod.name][0]
        state = pod.probe_state
        if self.procs[pod.name].poll() is not None:
            return False
        for kind in ("startupProbe", "readinessProbe"):
            probe = c.get(kind)
            if probe is None or (kind == "startupProbe" and state["startup"]):
                continue
            if state["health_missing"] and "grpc" in probe:
                ok = k8s_pods.tcp_open(pod.ip, probe["grpc"]["port"])
                detail = "TCP port open (health service missing)"
            else:
                ok, detail = k8s_pods.probe_once(pod, c, probe)
                if "UNIMPLEMENTED" in detail and not state["health_missing"]:
                    state["health_missing"] = True
                    self.fail(f"{pod.name}: {kind}: {detail}: the daemon does not serve grpc.health.v1; "
                              "Kubernetes would never see it ready (going on with a TCP check)")
            state["detail"] = f"{kind}: {detail}"
            if not ok:
                return False
            if kind == "startupProbe":
                state["startup"] = True
        return True

    def scrape_metrics(self, pod):
        ann = pod.annotations
        if ann.get("prometheus.io/scrape") != "true":
            return None
        url = f"http://{pod.ip}:{ann.get('prometheus.io/port')}{ann.get('prometheus.io/path', '/metrics')}"
        try:
            status, body = k8s_pods.http_get(url)
        except OSError as e:
            return f"GET {url}: {e}"
        if status != 200 or "# TYPE" not in body:
            return f"GET {url}: status {status}, {len(body)} bytes, no '# TYPE' line"
        return ""

    def coordinator_address(self):
        """What the servers and workers dial: their CAIRN_COORDINATOR, else
        the job file's cluster.coordinator."""
        for pod in self.pods:
            value = self.commands[pod.name][1].get("CAIRN_COORDINATOR")
            if value:
                return value
        return (self.settings.get("cluster") or {}).get("coordinator", "127.0.0.1:7070")

    def cairnctl_status(self):
        address = self.coordinator_address()
        r = subprocess.run([os.path.join(self.args.bin_dir, "cairnctl"), "--coordinator", address,
                            "--timeout", "2s", "status", "--json"],
                           capture_output=True, text=True, timeout=10,
                           env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        if r.returncode != 0:
            return None, f"cairnctl --coordinator {address} status: exit {r.returncode}: {r.stderr.strip()[-300:]}"
        return json.loads(r.stdout), ""

    def run(self):
        self.run_pods()
        if self.aborted:
            return
        self.check_workers(self.workers, self.seen_workers)
        self.finish(self.daemons, self.workers)

    def run_pods(self):
        pending = list(self.pods)
        group_order = {}
        for pod in self.pods:
            group_order.setdefault(pod.group, len(group_order))
        next_start = 0.0
        started_at = time.monotonic()
        workers = self.workers = [p for p in self.pods if p.component == "worker"]
        servers = [p for p in self.pods if p.component == "server"]
        self.daemons = [p for p in self.pods if p.component != "worker"]
        metrics_ok = {}
        seen_workers = self.seen_workers = {}
        servers_checked = False
        last_probe = {}
        while True:
            now = time.monotonic()
            if not self.poll_exits():
                self.aborted = True
                return
            # One start at a time, the highest index of a group first: a
            # member that took its id from the order of registration instead
            # of its pod's index shows up in check_servers.
            startable = [pod for pod in pending if all(p.name in self.ready for p in pod.after)]
            if startable and now >= next_start:
                pod = min(startable, key=lambda p: (group_order[p.group], -(p.index or 0)))
                self.start(pod)
                pending.remove(pod)
                next_start = now + START_GAP
            for name in list(self.procs):
                pod = next(p for p in self.pods if p.name == name)
                if name in self.ready or name in self.exit_time:
                    continue
                if now - last_probe.get(name, 0) < 0.25:
                    continue
                last_probe[name] = now
                if self.check_ready(pod):
                    self.ready.add(name)
                    self.note(f"{name} ready after {max(0.0, now - pod.started):.1f}s")
                elif now - pod.started > READY_TIMEOUT:
                    self.fail(f"{name}: not ready after {READY_TIMEOUT:.0f}s ({pod.probe_state['detail']}); "
                              "counting it ready to go on")
                    self.ready.add(name)
            # /metrics of every running pod that asks to be scraped.
            for name in self.ready:
                if name in metrics_ok and metrics_ok[name] == "":
                    continue
                if name in self.exit_time:
                    continue
                pod = next(p for p in self.pods if p.name == name)
                result = self.scrape_metrics(pod)
                if result is not None:
                    metrics_ok[name] = result
            # Membership as the coordinator sees it.
            if servers and not servers_checked and all(p.name in self.ready for p in servers):
                servers_checked = self.check_servers(servers)
            if any(p.name in self.procs and p.name not in self.exit_time for p in workers):
                status, _ = self.cairnctl_status()
                for m in (status or {}).get("members", []):
                    if m.get("role") == "worker":
                        seen_workers[m.get("id")] = m
            if workers and all(p.name in self.exit_time for p in workers):
                break
            if not workers and not pending:
                break
            if now - started_at > RUN_TIMEOUT:
                self.fail(f"the workers did not finish within {RUN_TIMEOUT:.0f}s")
                break
            if all(p.name in self.exit_time for p in self.pods) and not pending:
                break
            time.sleep(0.1)
        for pod in self.pods:
            if pod.annotations.get("prometheus.io/scrape") == "true" and pod.name in self.procs:
                result = metrics_ok.get(pod.name)
                if result is None:
                    self.fail(f"{pod.name}: /metrics never reached while it ran")
                elif result:
                    self.fail(f"{pod.name}: {result}")
        if servers and not servers_checked:
            self.fail("the coordinator's view of the servers was never checked (servers never all ready)")

    def check_servers(self, servers):
        deadline = time.monotonic() + 10
        while True:
            status, err = self.cairnctl_status()
            members = [m for m in (status or {}).get("members", []) if m.get("role") == "server"]
            if len(members) >= len(servers) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if status is None:
            self.fail(f"cannot ask the coordinator for its members: {err}")
            return True
        by_id = {m.get("id"): m for m in members}
        for pod in servers:
            argv = self.commands[pod.name][2]
            port = listen_port(argv)
            m = by_id.get(pod.index)
            if m is None:
                self.fail(f"{pod.name} (index {pod.index}): the coordinator has no server {pod.index}; "
                          f"it has {sorted(by_id)} at {[by_id[i].get('address') for i in sorted(by_id)]}")
                continue
            want = f"{pod.ip}:{port}"
            if m.get("address") != want:
                self.fail(f"{pod.name}: server {pod.index} is at {m.get('address')}, not at the pod's "
                          f"IP and --listen port {want}")
        self.note(f"servers as the coordinator sees them: "
                  f"{[(m.get('id'), m.get('address')) for m in members]}")
        return True

    def check_workers(self, workers, seen):
        for pod in workers:
            if pod.name in self.exit_time and self.procs[pod.name].returncode != 0:
                continue  # reported when it exited
            m = seen.get(pod.index)
            if m is None:
                self.fail(f"{pod.name} (index {pod.index}): the coordinator never listed worker "
                          f"{pod.index} (seen: {sorted(k for k in seen if k is not None)})")
            log = self.read_log(pod)
            steps = re.findall(r"done: (\d+) steps", log)
            if not steps:
                self.fail(f"{pod.name}: no 'done: N steps' line in its log")
            elif int(steps[-1]) != MAX_STEPS:
                self.fail(f"{pod.name}: trained {steps[-1]} steps, not training.max_steps {MAX_STEPS}")
            code = self.procs[pod.name].returncode if pod.name in self.procs else None
            if code != 0:
                self.fail(f"{pod.name}: {k8s_pods.describe_exit(code)}")

    def finish(self, daemons, workers):
        cluster = self.settings.get("cluster") or {}
        exit_when_done = cluster.get("exit_when_done", True)
        grace = max((p.spec.get("terminationGracePeriodSeconds", 30) for p in daemons), default=30)
        workers_done = max((self.exit_time.get(p.name, time.monotonic()) for p in workers),
                           default=time.monotonic())
        if exit_when_done:
            # Every worker left: the coordinator ends the job; servers leave
            # and exit 0, the coordinator once they have left (a server's
            # process may end a moment after its leave).
            wait = k8s_pods.duration_seconds(cluster.get("shutdown_grace", "30s")) + 10
            deadline = workers_done + wait
            while time.monotonic() < deadline and any(
                    p.name in self.procs and self.procs[p.name].poll() is None for p in daemons):
                self.poll_exits()
                time.sleep(0.05)
            self.poll_exits()
            for pod in daemons:
                proc = self.procs.get(pod.name)
                if proc is None:
                    continue
                if proc.poll() is None:
                    self.fail(f"{pod.name}: still running {wait:.0f}s after every worker finished; "
                              "with cluster.exit_when_done true it should have exited 0 "
                              "(JobSet would stop it with SIGTERM)")
                elif proc.returncode != 0:
                    self.fail(f"{pod.name}: {k8s_pods.describe_exit(proc.returncode)} at the end of the job")
            coord = [p for p in daemons if p.component == "coordinator" and p.name in self.exit_time]
            others = [p for p in daemons if p.component != "coordinator" and p.name in self.exit_time]
            for c in coord:
                early = [o.name for o in others if self.exit_time[o.name] > self.exit_time[c.name] + 1.0]
                if early:
                    self.fail(f"{c.name} exited before {', '.join(early)}; the coordinator exits last")
        else:
            # Stays up: a StatefulSet would start an exited pod again.
            time.sleep(2)
            self.poll_exits()
            for pod in daemons:
                proc = self.procs.get(pod.name)
                if proc is not None and proc.poll() is not None:
                    self.fail(f"{pod.name}: {k8s_pods.describe_exit(proc.returncode)} after the workers finished, "
                              "although cluster.exit_when_done is false; its controller would start it again")
            # kubectl delete: SIGTERM to every pod at once.
            live = [p for p in daemons if p.name in self.procs and self.procs[p.name].poll() is None]
            self.note(f"workers done; SIGTERM to {', '.join(p.name for p in live)} (kubectl delete)")
            for pod in live:
                self.procs[pod.name].send_signal(15)
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and any(self.procs[p.name].poll() is None for p in live):
                time.sleep(0.1)
            for pod in live:
                code = k8s_pods.terminate(self.procs[pod.name], 0.1)
                if code != 0:
                    self.fail(f"{pod.name}: {k8s_pods.describe_exit(code)} on SIGTERM "
                              f"(terminationGracePeriodSeconds {grace})")

    def read_log(self, pod):
        try:
            with open(self.logs[pod.name], encoding="utf-8", errors="replace") as f:
                return f.read()
        except (KeyError, OSError):
            return ""

    def close(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if hasattr(self, "net"):
            self.net.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--manifest", action="append", default=[],
                        help="run these files instead of a recipe (repeatable)")
    parser.add_argument("--plant", action="append", default=[], metavar="OLD=>NEW",
                        help="change the manifests' text first (a planted mistake; repeatable)")
    parser.add_argument("--expect-failure", metavar="REGEX",
                        help="pass only if the run fails with a failure matching REGEX")
    parser.add_argument("recipe", nargs="?", choices=sorted(RECIPES))
    args = parser.parse_args()
    if bool(args.recipe) == bool(args.manifest):
        parser.error("name a recipe or --manifest files")
    args.bin_dir = os.path.abspath(args.bin_dir)
    args.source_dir = os.path.abspath(args.source_dir)
    skip = k8s_pods.enter_private_namespaces()
    if skip:
        print(f"SKIP: {skip}")
        return 77
    try:
        import grpc  # noqa: F401
    except ImportError:
        print("FAIL: python3-grpcio is missing (tools/setup installs it)")
        return 1
    run = Run(args)
    t0 = time.monotonic()
    try:
        run.prepare()
        run.run()
    except ManifestError as e:
        run.fail(f"manifest: {e}")
    finally:
        run.close()
    elapsed = time.monotonic() - t0
    if args.expect_failure:
        matched = [f for f in run.failures if re.search(args.expect_failure, f)]
        if hasattr(run, "workdir"):
            shutil.rmtree(run.workdir, ignore_errors=True)
        if matched:
            print(f"passed: the planted mistake failed the run as expected in {elapsed:.1f}s")
            return 0
        print(f"FAIL: no failure matched {args.expect_failure!r} (failures: {run.failures})")
        return 1
    if run.failures:
        for pod in run.pods if hasattr(run, "pods") else []:
            log = run.read_log(pod)
            code = run.procs[pod.name].returncode if pod.name in run.procs else None
            print(f"--- {pod.name} ({k8s_pods.describe_exit(code) if pod.name in run.procs else 'not started'}), "
                  f"last lines of {run.logs.get(pod.name, '-')}:")
            print("\n".join(log.splitlines()[-12:]))
        print(f"{len(run.failures)} failures in {elapsed:.1f}s; the run's files are in {run.workdir}")
        return 1
    if hasattr(run, "workdir"):
        shutil.rmtree(run.workdir, ignore_errors=True)
    print(f"passed in {elapsed:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
