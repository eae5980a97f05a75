#!/usr/bin/env python3
"""A Cairn job spread over five hosts, started by hand with the cluster
contract (docs/deploy.md), against the same job on loopback.

  multihost_test.py --bin-dir BUILD/bin --source-dir SRC

Each process runs on a host of its own: a network and UTS namespace with its
own address on one bridge and its own host name (k8s_pods.PodNetwork), inside
a private user, network and mount namespace this test makes for itself. The
hosts reach each other by name only, through a hosts file bind-mounted over
/etc/hosts in that private mount namespace; /etc/resolv.conf names a DNS
server on the bridge that knows no name, so nothing else resolves.

  cairn-coordinator   cairn-coordinator --listen 0.0.0.0:7070
  cairn-server-0/1    cairn-server --listen 0.0.0.0:7071
  cairn-worker-0/1    cairn-worker --summary FILE

Every process gets CAIRN_COORDINATOR=cairn-coordinator:7070, CAIRN_INDEX
(servers and workers) and CAIRN_ADVERTISE_HOST=<its host name>, and the
settings --set training.epochs=1, metrics.host=0.0.0.0 and a fixed
metrics.port. Everything else is examples/fashion-mnist.yaml as it is
(BSP). The test checks, and reports every failure it finds:
  - no process on those hosts listens on, or talks to, a loopback address
    (/proc/PID/net/tcp and tcp6 of each host, sampled while the job runs),
    each listens on the wildcard address at its ports (gRPC makes a
    0.0.0.0 listener the dual-stack [::]), and no process logs a loopback
    address (but for the job file's own cluster.coordinator, echoed with
    the configuration at start, which CAIRN_COORDINATOR overrides);
  - the coordinator's log says "server N registered at cairn-server-N:7071",
    and `cairnctl --coordinator cairn-coordinator:7070 status`, run from
    the bridge's own address, lists each member under its index at its host
    name, /metrics included, and reaches each server there (noted when a busy
    machine keeps that call from connecting in time: the workers reach the
    servers at those names to train);
  - /metrics of every process answers at http://<host name>:PORT/metrics,
    fetched from the bridge's own address;
  - every worker trains one epoch and exits 0, and the servers and the
    coordinator then exit 0 by themselves within LIFECYCLE_S seconds;
  - each worker's test_accuracy (--summary) is within ACCURACY_TOLERANCE of
    the same worker's in `cairn-launch examples/fashion-mnist.yaml
    --set training.epochs=1 --summary FILE`, run afterwards by this test on
    loopback (in this test's own network namespace), and took the same
    number of steps. Both runs get the same environment: a plain PATH and
    the caller's OPENBLAS_* variables (one BLAS thread per worker, as
    cairn-launch sets it);
  - nothing the test started is left running at its end.
Exit 0: passed; 1: failed (the run's folder is kept and named); 77: this
machine permits no private network namespace (skipped).
"""

import argparse
import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k8s_pods  # noqa: E402

JOB = "examples/fashion-mnist.yaml"
SETTINGS = ["training.epochs=1"]               # the only change to the job
COORDINATOR_PORT = 7070
SERVER_PORT = 7071
METRICS_PORT = 9400
DEPLOY_SETTINGS = ["metrics.host=0.0.0.0", f"metrics.port={METRICS_PORT}"]
ACCURACY_TOLERANCE = 0.01
LIFECYCLE_S = 10.0        # servers and coordinator exit within this of the last worker
START_TIMEOUT_S = 30.0    # the coordinator listens within this
RUN_TIMEOUT_S = 110.0     # from the first start to the last worker's exit
LAUNCH_TIMEOUT_S = 110.0  # the loopback run, whole
MEMBERSHIP_TIMEOUT_S = 30.0  # to see every member listed, while the job runs
CAIRNCTL_DEADLINE = "10s"    # each call of cairnctl (a busy machine is slow)

T0 = time.monotonic()


def say(msg):
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", flush=True)


class Interrupted(Exception):
    """SIGTERM or SIGINT reached the test: clean up, report, exit 128+N."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


class Host:
    """One machine of the job: what PodNetwork needs (name, hostname; it
    sets ip) and the process it runs."""

    def __init__(self, role, index, hostname):
        self.role = role            # coordinator, server, worker
        self.index = index          # None for the coordinator
        self.name = hostname
        self.hostname = hostname
        self.ip = None
        self.proc = None
        self.log = None
        self.exit_time = None       # monotonic time of its exit, set by its waiter
        self.reported = False
        self.argv = None
        self.env = None

    def __repr__(self):
        return self.hostname


# ---------------------------------------------------------------------------
# Sockets of a network namespace, from /proc/PID/net/tcp and tcp6.

def _decode_address(text):
    """ADDR:PORT of /proc/net/tcp*: the address as 32-bit words in the
    machine's byte order, the port in hex."""
    host, port = text.split(":")
    raw = bytes.fromhex(host)
    if sys.byteorder == "little":
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.IPv4Address(raw) if len(raw) == 4 else ipaddress.IPv6Address(raw)
    return ip, int(port, 16)


def tcp_sockets(pid):
    """[(local ip, local port, remote ip, remote port, listening)] of the
    network namespace process `pid` is in."""
    out = []
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}", encoding="ascii") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 4:
                continue
            lip, lport = _decode_address(fields[1])
            rip, rport = _decode_address(fields[2])
            out.append((lip, lport, rip, rport, fields[3] == "0A"))
    return out


def is_loopback(ip):
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def is_unspecified(ip):
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_unspecified


def base_env():
    """The environment of every Cairn process in both runs: a plain PATH
    and the caller's OPENBLAS_* settings (a fixed core type, say), so both
    runs compute alike; nothing else of the caller's."""
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
    env.update({k: v for k, v in os.environ.items() if k.startswith("OPENBLAS_")})
    return env


def show(ip, port):
    return f"[{ip}]:{port}" if ip.version == 6 else f"{ip}:{port}"


# ---------------------------------------------------------------------------

class Run:
    def __init__(self, args):
        self.args = args
        self.failures = []
        self.workdir = tempfile.mkdtemp(prefix="cairn-multihost-")
        self.job = os.path.join(args.source_dir, JOB)
        self.hosts = ([Host("coordinator", None, "cairn-coordinator")]
                      + [Host("server", i, f"cairn-server-{i}") for i in range(2)]
                      + [Host("worker", i, f"cairn-worker-{i}") for i in range(2)])
        self.net = None
        self.launch = None
        self.listeners = {h.hostname: set() for h in self.hosts}   # (ip, port)
        self.loopback_seen = {h.hostname: set() for h in self.hosts}
        self.multihost_accuracy = {}
        self.loopback_accuracy = {}
        self.timings = {}

    def fail(self, message):
        self.failures.append(message)
        say(f"FAIL: {message}")

    def bin(self, name):
        return os.path.join(self.args.bin_dir, name)

    # -- the hosts ----------------------------------------------------------

    def make_hosts(self):
        self.net = k8s_pods.PodNetwork(self.workdir)
        for h in self.hosts:
            self.net.add_pod(h)
        hosts_file = os.path.join(self.workdir, "hosts")
        with open(hosts_file, "w", encoding="utf-8") as f:
            f.write("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
            for h in self.hosts:
                f.write(f"{h.ip}\t{h.hostname}\n")
        resolv = os.path.join(self.workdir, "resolv.conf")
        with open(resolv, "w", encoding="utf-8") as f:
            f.write(f"nameserver {k8s_pods.NODE_IP}\noptions timeout:1 attempts:1\n")
        # A DNS server that answers NXDOMAIN to every name: only the hosts
        # file resolves, and a name outside it fails at once.
        self.net.dns = k8s_pods.DnsServer(k8s_pods.NODE_IP, {})
        k8s_pods._run(["mount", "--bind", hosts_file, "/etc/hosts"])
        k8s_pods._run(["mount", "--bind", resolv, "/etc/resolv.conf"])
        for h in self.hosts:
            say(f"host {h.hostname} at {h.ip}")

    def command(self, h):
        settings = []
        for s in SETTINGS + DEPLOY_SETTINGS:
            settings += ["--set", s]
        env = base_env()
        env.update({
            "CAIRN_COORDINATOR": f"cairn-coordinator:{COORDINATOR_PORT}",
            "CAIRN_ADVERTISE_HOST": h.hostname,
        })
        if h.index is not None:
            env["CAIRN_INDEX"] = str(h.index)
        if h.role == "coordinator":
            argv = [self.bin("cairn-coordinator"), "--config", self.job,
                    "--listen", f"0.0.0.0:{COORDINATOR_PORT}"] + settings
        elif h.role == "server":
            argv = [self.bin("cairn-server"), "--config", self.job,
                    "--listen", f"0.0.0.0:{SERVER_PORT}"] + settings
        else:
            # One BLAS thread per worker, as cairn-launch sets it on this
            # machine, so both runs compute alike.
            env["OPENBLAS_NUM_THREADS"] = "1"
            argv = [self.bin("cairn-worker"), "--config", self.job,
                    "--summary", self.summary_path(h)] + settings
        return argv, env

    def summary_path(self, h):
        return os.path.join(self.workdir, "summaries", f"{h.hostname}.json")

    def start(self, h):
        h.argv, h.env = self.command(h)
        home = os.path.join(self.workdir, "home", h.hostname)
        os.makedirs(home, exist_ok=True)
        os.makedirs(os.path.join(self.workdir, "summaries"), exist_ok=True)
        h.log = os.path.join(self.workdir, "logs", f"{h.hostname}.log")
        os.makedirs(os.path.dirname(h.log), exist_ok=True)
        with open(h.log, "w", encoding="utf-8") as log:
            h.proc = subprocess.Popen(
                k8s_pods.DIE_WITH_PARENT + self.net.enter_prefix(h) + h.argv, env=h.env,
                cwd=home, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)

        def wait_for_exit(host=h):
            host.proc.wait()
            host.exit_time = time.monotonic()

        threading.Thread(target=wait_for_exit, daemon=True).start()
        shown = " ".join(f"{k}={v}" for k, v in sorted(h.env.items()) if k.startswith("CAIRN_"))
        say(f"{h.hostname}: started {shown} {os.path.basename(h.argv[0])} {' '.join(h.argv[1:])}")

    def read_log(self, h):
        try:
            with open(h.log, encoding="utf-8", errors="replace") as f:
                return f.read()
        except (OSError, TypeError):
            return ""

    def holder_pid(self, h):
        return self.net.holders[h.name].pid

    # -- watching -----------------------------------------------------------

    def sample_sockets(self):
        for h in self.hosts:
            for lip, lport, rip, rport, listening in tcp_sockets(self.holder_pid(h)):
                if listening:
                    self.listeners[h.hostname].add((lip, lport))
                if is_loopback(lip) or (not listening and is_loopback(rip)):
                    what = (f"listens on {show(lip, lport)}" if listening
                            else f"has a connection {show(lip, lport)} -> {show(rip, rport)}")
                    self.loopback_seen[h.hostname].add(what)

    def poll_exits(self):
        for h in self.hosts:
            if h.exit_time is not None and not h.reported:
                h.reported = True
                say(f"{h.hostname}: {k8s_pods.describe_exit(h.proc.returncode)}")

    def wait_listening(self, h, port, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if h.exit_time is not None:
                return False
            if any(listening and lport == port
                   for _, lport, _, _, listening in tcp_sockets(self.holder_pid(h))):
                return True
            time.sleep(0.1)
        return False

    def cairnctl_status(self):
        """`cairnctl status --json` from the bridge's own address (another
        host): (the status or None, what went wrong or "")."""
        try:
            r = subprocess.run([self.bin("cairnctl"), "--coordinator", f"cairn-coordinator:{COORDINATOR_PORT}",
                                "--timeout", CAIRNCTL_DEADLINE, "status", "--json"],
                               capture_output=True, text=True, timeout=60,
                               env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
        except subprocess.TimeoutExpired:
            return None, "no answer within 60s"
        status = None
        try:
            status = json.loads(r.stdout) if r.stdout.strip() else None
        except json.JSONDecodeError:
            pass
        if r.returncode == 0 and status is not None:
            return status, ""
        problem = f"exit {r.returncode}: {r.stderr.strip()[-400:]}"
        for s in (status or {}).get("servers", []):
            if not s.get("ok"):
                problem += f" server {s.get('id')} at {s.get('address')}: {s.get('error')}"
        # Exit 3: the members were listed, a server's Stats did not answer.
        return (status if r.returncode == 3 else None), problem

    def check_membership(self):
        """The coordinator's members, once all are in: each at its host
        name; and each server reached at the address it advertised (by
        cairnctl, which calls each server's Stats there). Retried while the
        job runs: on a busy machine one call may miss its deadline."""
        deadline = time.monotonic() + MEMBERSHIP_TIMEOUT_S
        complete, reached, problems = None, False, []
        while time.monotonic() < deadline and not reached:
            if any(h.exit_time is not None for h in self.hosts):
                break
            status, problem = self.cairnctl_status()
            members = (status or {}).get("members", [])
            if (sum(m.get("role") == "server" and m.get("state") == "alive" for m in members) >= 2
                    and sum(m.get("role") == "worker" for m in members) >= 2):
                complete = status
                servers = status.get("servers", [])
                reached = len(servers) >= 2 and all(s.get("ok") for s in servers)
            if problem:
                problems.append(problem)
                say(f"cairnctl status: {problem}")
            if not reached:
                time.sleep(0.5)
        if complete is None:
            what = (f"cairnctl --coordinator cairn-coordinator:{COORDINATOR_PORT} status never listed "
                    f"2 servers and 2 workers while the job ran: {problems[-1] if problems else ''}")
            self.fail(what)
            return
        if not reached:
            # The workers reach the servers at those names all along (they
            # train); a machine too busy for one more connection to be set
            # up within the deadline is not the job's failure.
            say(f"note: cairnctl did not get both servers' Stats at their advertised addresses "
                f"while the job ran: {problems[-1] if problems else ''}")
        else:
            say("cairnctl reached both servers at their advertised addresses")
        status = complete
        members = {(m.get("role"), m.get("id")): m for m in status.get("members", [])}
        say("members as the coordinator lists them: " + "; ".join(
            f"{r} {i} address {m.get('address')!r} metrics {m.get('metrics_address')!r}"
            for (r, i), m in sorted(members.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))))
        for h in self.hosts:
            if h.role == "coordinator":
                continue
            m = members.get((h.role, h.index))
            if m is None:
                self.fail(f"{h.hostname}: the coordinator lists no {h.role} {h.index} "
                          f"(members: {sorted(members)})")
                continue
            if h.role == "server" and m.get("address") != f"{h.hostname}:{SERVER_PORT}":
                self.fail(f"{h.hostname}: server {h.index} is listed at {m.get('address')!r}, "
                          f"not at {h.hostname}:{SERVER_PORT}")
            for key in ("address", "metrics_address"):
                value = m.get(key) or ""
                host = value.rsplit(":", 1)[0].strip("[]") if value else ""
                if not value or host == h.hostname:
                    continue
                try:
                    ip = ipaddress.ip_address(host)
                except ValueError:
                    ip = None
                self.fail(f"{h.hostname}: {h.role} {h.index}'s {key} is {value!r}: another host "
                          f"could not use it (expected {h.hostname}:PORT)")

    def check_metrics(self):
        """GET /metrics of every process by its host name, from the
        bridge's own address; three tries each (a busy machine)."""
        for h in self.hosts:
            url = f"http://{h.hostname}:{METRICS_PORT}/metrics"
            problem = None
            for _ in range(3):
                if h.exit_time is not None:
                    problem = None  # it ended meanwhile; its exit is checked
                    break
                try:
                    code, body = k8s_pods.http_get(url, timeout=10)
                except OSError as e:
                    problem = f"GET {url}: {e}"
                    time.sleep(0.5)
                    continue
                problem = None if code == 200 and "# TYPE" in body else \
                    f"GET {url}: status {code}, no '# TYPE' line"
                break
            if problem:
                self.fail(f"{h.hostname}: {problem}")

    # -- the multi-host job -------------------------------------------------

    def run_multihost(self):
        coordinator = self.hosts[0]
        start = time.monotonic()
        self.start(coordinator)
        if not self.wait_listening(coordinator, COORDINATOR_PORT, START_TIMEOUT_S):
            self.poll_exits()
            self.fail(f"cairn-coordinator: not listening on port {COORDINATOR_PORT} within "
                      f"{START_TIMEOUT_S:.0f}s ({k8s_pods.describe_exit(coordinator.proc.returncode)})")
            return False
        for h in self.hosts[1:]:
            self.start(h)
        workers = [h for h in self.hosts if h.role == "worker"]
        daemons = [h for h in self.hosts if h.role != "worker"]
        checked = False
        aborted = False
        while True:
            self.poll_exits()
            self.sample_sockets()
            early = [h for h in self.hosts if h.exit_time is not None and h.proc.returncode != 0]
            if early:
                for h in early:
                    self.fail(f"{h.hostname}: {k8s_pods.describe_exit(h.proc.returncode)} while the job ran")
                aborted = True
                break
            if not checked and "start-up barrier passed" in self.read_log(coordinator):
                say("start-up barrier passed")
                self.check_metrics()
                self.check_membership()
                checked = True
            if all(h.exit_time is not None for h in workers):
                break
            if time.monotonic() - start > RUN_TIMEOUT_S:
                self.fail(f"the workers did not finish within {RUN_TIMEOUT_S:.0f}s")
                aborted = True
                break
            time.sleep(0.25)
        if aborted:
            return False
        if not checked:
            self.fail("the job ended before the coordinator's membership could be checked")
        for h in workers:
            if h.proc.returncode != 0:
                self.fail(f"{h.hostname}: {k8s_pods.describe_exit(h.proc.returncode)}")
            else:
                say(f"{h.hostname} exited 0")
        last_worker = max(h.exit_time for h in workers)
        self.timings["multihost, to the last worker's exit"] = last_worker - start
        # The lifecycle: every daemon exits 0 by itself.
        while (time.monotonic() < last_worker + LIFECYCLE_S
               and any(h.exit_time is None for h in daemons)):
            self.poll_exits()
            self.sample_sockets()
            time.sleep(0.05)
        self.poll_exits()
        for h in daemons:
            if h.exit_time is None:
                self.fail(f"{h.hostname}: still running {LIFECYCLE_S:.0f}s after the last worker "
                          "finished; it should have exited 0 by itself")
            elif h.proc.returncode != 0:
                self.fail(f"{h.hostname}: {k8s_pods.describe_exit(h.proc.returncode)} at the end of the job")
            else:
                say(f"{h.hostname} exited 0 {h.exit_time - last_worker:.2f}s after the last worker")
        self.timings["multihost, to the last exit"] = time.monotonic() - start
        return True

    def check_addresses(self):
        coordinator_log = self.read_log(self.hosts[0])
        for h in self.hosts:
            if h.role != "server":
                continue
            seen = re.findall(rf"server {h.index} registered at (\S+?);", coordinator_log)
            if not seen:
                self.fail(f"the coordinator's log has no 'server {h.index} registered at' line")
            for address in seen:
                if address != f"{h.hostname}:{SERVER_PORT}":
                    self.fail(f"the coordinator's log: server {h.index} registered at {address}, "
                              f"not at {h.hostname}:{SERVER_PORT}")
        for h in self.hosts:
            if h.proc is None:
                continue
            for what in sorted(self.loopback_seen[h.hostname]):
                self.fail(f"{h.hostname}: {what}")
            want = {"coordinator": [COORDINATOR_PORT, METRICS_PORT],
                    "server": [SERVER_PORT, METRICS_PORT], "worker": [METRICS_PORT]}[h.role]
            for port in want:
                if not any(lport == port and is_unspecified(ip) for ip, lport in self.listeners[h.hostname]):
                    self.fail(f"{h.hostname}: never seen listening on port {port} of the wildcard "
                              f"address (0.0.0.0 or [::]) "
                              f"(listeners: {sorted(show(ip, p) for ip, p in self.listeners[h.hostname])})")
            say(f"{h.hostname} listened on "
                f"{', '.join(sorted(show(ip, p) for ip, p in self.listeners[h.hostname]))}")
        # Loopback addresses in what the processes logged, other than the
        # job file's own cluster.coordinator (which CAIRN_COORDINATOR
        # overrides) in the configuration they echo at start.
        for h in self.hosts:
            for line in self.read_log(h).splitlines():
                if re.search(r"\b127\.\d+\.\d+\.\d+|\blocalhost\b|\[::1\]", line) and \
                        not re.search(r"config: cluster\.coordinator: 127\.0\.0\.1:\d+$", line):
                    self.fail(f"{h.hostname} logged a loopback address: {line.strip()}")

    def read_summaries(self):
        for h in self.hosts:
            if h.role != "worker":
                continue
            try:
                with open(self.summary_path(h), encoding="utf-8") as f:
                    self.multihost_accuracy[h.index] = json.load(f)
            except (OSError, ValueError) as e:
                self.fail(f"{h.hostname}: no summary: {e}")

    # -- the loopback job ---------------------------------------------------

    def run_loopback(self):
        """The same job on loopback, by cairn-launch, in this test's own
        network namespace (the bridge's host, where lo is up)."""
        summary = os.path.join(self.workdir, "loopback-summary.json")
        log_path = os.path.join(self.workdir, "logs", "cairn-launch.log")
        argv = [self.bin("cairn-launch"), self.job]
        for s in SETTINGS:
            argv += ["--set", s]
        argv += ["--summary", summary]
        say(f"loopback: {' '.join(os.path.basename(a) if a == argv[0] else a for a in argv)}")
        start = time.monotonic()
        with open(log_path, "w", encoding="utf-8") as log:
            self.launch = subprocess.Popen(
                k8s_pods.DIE_WITH_PARENT + argv, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, cwd=self.workdir, start_new_session=True,
                env=dict(base_env(), TMPDIR=self.workdir))
            try:
                code = self.launch.wait(LAUNCH_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                code = None
        self.timings["loopback (cairn-launch)"] = time.monotonic() - start
        if code != 0:
            self.fail(f"cairn-launch: {k8s_pods.describe_exit(code)} after {self.timings['loopback (cairn-launch)']:.0f}s"
                      + (f" (its limit is {LAUNCH_TIMEOUT_S:.0f}s)" if code is None else ""))
            return
        with open(summary, encoding="utf-8") as f:
            data = json.load(f)
        for w in data.get("per_worker", []):
            self.loopback_accuracy[w.get("worker")] = w

    def compare(self):
        for index in sorted(self.multihost_accuracy):
            mine = self.multihost_accuracy[index]
            theirs = self.loopback_accuracy.get(index)
            if theirs is None:
                self.fail(f"the loopback run has no summary of worker {index}")
                continue
            a, b = mine.get("test_accuracy"), theirs.get("test_accuracy")
            say(f"worker {index}: test_accuracy {a} across hosts, {b} on loopback; "
                f"steps {mine.get('steps')} and {theirs.get('steps')}")
            if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or \
                    abs(a - b) > ACCURACY_TOLERANCE:
                self.fail(f"worker {index}: test_accuracy {a} across hosts vs {b} on loopback: "
                          f"more than {ACCURACY_TOLERANCE} apart")
            if mine.get("steps") != theirs.get("steps"):
                self.fail(f"worker {index}: {mine.get('steps')} steps across hosts, "
                          f"{theirs.get('steps')} on loopback")

    # -- cleaning up --------------------------------------------------------

    def close(self):
        """Stops whatever still runs (SIGKILL to each process group), the
        hosts' namespaces and the DNS server, then checks that no process
        is left in any of this test's network namespaces."""
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, signal.SIG_IGN)
        namespaces = set()
        for ref in ["self"] + ([str(p.pid) for p in self.net.holders.values()] if self.net else []):
            try:
                namespaces.add(os.readlink(f"/proc/{ref}/ns/net"))
            except OSError:
                pass
        procs = [h.proc for h in self.hosts if h.proc is not None]
        if self.launch is not None:
            procs.append(self.launch)
        for proc in procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    proc.kill()
            proc.wait()
        if self.launch is not None:
            try:  # cairn-launch's children, should it have died before them
                os.killpg(self.launch.pid, signal.SIGKILL)
            except OSError:
                pass
        if self.net is not None:
            self.net.close()
        deadline = time.monotonic() + 5
        while True:
            left = []
            for pid in os.listdir("/proc"):
                if not pid.isdigit() or int(pid) == os.getpid():
                    continue
                try:
                    if os.readlink(f"/proc/{pid}/ns/net") in namespaces:
                        with open(f"/proc/{pid}/cmdline", "rb") as f:
                            left.append((int(pid), f.read().replace(b"\0", b" ").decode(errors="replace")))
                except OSError:
                    pass
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        for pid, cmd in left:
            self.fail(f"left running after the test: pid {pid}: {cmd.strip()}")
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def report_logs(self):
        def tail(text):
            return "\n".join([line for line in text.splitlines()
                              if " config: " not in line and "progress label=" not in line][-15:])

        for h in self.hosts:
            code = h.proc.returncode if h.proc is not None else None
            print(f"--- {h.hostname} ({k8s_pods.describe_exit(code) if h.proc else 'not started'}), "
                  f"last lines of {h.log}:")
            print(tail(self.read_log(h)))
        if self.launch is not None:
            path = os.path.join(self.workdir, "logs", "cairn-launch.log")
            with open(path, encoding="utf-8", errors="replace") as f:
                print(f"--- cairn-launch ({k8s_pods.describe_exit(self.launch.returncode)}), last lines of {path}:")
                print(tail(f.read()))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    args.bin_dir = os.path.abspath(args.bin_dir)
    args.source_dir = os.path.abspath(args.source_dir)
    skip = k8s_pods.enter_private_namespaces("CAIRN_MULTIHOST_PRIVATE_NS")
    if skip:
        print(f"SKIP: {skip}")
        return 77
    for name in ("cairn-coordinator", "cairn-server", "cairn-worker", "cairn-launch", "cairnctl"):
        if not os.access(os.path.join(args.bin_dir, name), os.X_OK):
            print(f"FAIL: {name} is not in {args.bin_dir}")
            return 1

    def on_term(signum, _frame):
        raise Interrupted(signum)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    run = Run(args)
    stopped_by = None
    try:
        run.make_hosts()
        finished = run.run_multihost()
        run.check_addresses()
        if finished:
            run.read_summaries()
            run.run_loopback()
            run.compare()
    except Interrupted as e:
        stopped_by = e.signum
        run.fail(f"the test was stopped by signal {e.signum}")
    except Exception as e:  # noqa: BLE001 - reported with the logs below
        run.fail(f"{type(e).__name__}: {e}")
    finally:
        run.close()
    elapsed = time.monotonic() - T0
    say("times: " + ", ".join(f"{k} {v:.1f}s" for k, v in run.timings.items()) + f"; whole test {elapsed:.1f}s")
    if run.failures:
        run.report_logs()
        print(f"{len(run.failures)} failures in {elapsed:.1f}s; the run's files are in {run.workdir}")
        return 128 + stopped_by if stopped_by else 1
    shutil.rmtree(run.workdir, ignore_errors=True)
    print(f"passed in {elapsed:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
