"""Real Cairn clusters for the Python client's tests: a cairn-coordinator and
cairn-server processes from the build (CAIRN_BUILD_DIR), on loopback, with
ports picked at run time and logs in pytest's temporary directory."""
import os
import subprocess
import sys
import time

import pytest

BUILD = os.environ.get("CAIRN_BUILD_DIR", os.path.join(os.path.dirname(__file__), "../../build"))
sys.path.insert(0, os.path.join(BUILD, "python"))


def _read_ports(path, process, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} exited with {process.returncode}")
        if os.path.exists(path):
            ports = dict(line.split("=") for line in open(path).read().split())
            return {k: int(v) for k, v in ports.items()}
        time.sleep(0.05)
    raise RuntimeError(f"no port file {path} within {timeout} s")


class Cluster:
    """A coordinator and `servers` servers started from `yaml`."""

    def __init__(self, directory, yaml, servers):
        self.dir = directory
        self.processes = []
        config = os.path.join(directory, "job.yaml")
        with open(config, "w") as f:
            f.write(yaml)
        bin_dir = os.path.join(BUILD, "bin")
        self.coordinator = self._start(
            [os.path.join(bin_dir, "cairn-coordinator"), "--config", config, "--listen",
             "127.0.0.1:0", "--port-file", os.path.join(directory, "coordinator.ports"),
             "--set", "cluster.exit_when_done=false"], "coordinator")
        ports = _read_ports(os.path.join(directory, "coordinator.ports"), self.coordinator)
        self.address = f"127.0.0.1:{ports['grpc']}"
        for i in range(servers):
            port_file = os.path.join(directory, f"server{i}.ports")
            server = self._start(
                [os.path.join(bin_dir, "cairn-server"), "--config", config, "--coordinator",
                 self.address, "--listen", "127.0.0.1:0", "--port-file", port_file], f"server{i}")
            _read_ports(port_file, server)

    def _start(self, command, name):
        log = open(os.path.join(self.dir, name + ".log"), "w")
        # The daemons die with this process, even when it crashes (util-linux's
        # setpriv; no preexec_fn, which is unsafe once gRPC's threads run).
        p = subprocess.Popen(["setpriv", "--pdeathsig", "KILL"] + command, stdout=log,
                             stderr=subprocess.STDOUT)
        self.processes.append(p)
        return p

    def kill_coordinator(self):
        self.coordinator.kill()
        self.coordinator.wait()

    def stop(self):
        for p in reversed(self.processes):
            if p.poll() is None:
                p.kill()
                p.wait()


@pytest.fixture
def cluster_factory(tmp_path):
    made = []

    def make(yaml, servers=1):
        c = Cluster(str(tmp_path), yaml, servers)
        made.append(c)
        return c

    yield make
    for c in made:
        c.stop()
