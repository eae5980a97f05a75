#!/usr/bin/env python3
"""Checks that the Kubernetes recipes (deploy/kubernetes) agree with the
cluster contract, with their own job file and with each other, without a
cluster or the binaries:

  k8s_manifest_test.py --source-dir SRC

For each recipe (jobset.yaml; plain/), on the pods its controllers would make
(k8s_pods.py):
  - the job file in the ConfigMap: examples/fashion-mnist.yaml's training,
    rpc and consistency, metrics on 0.0.0.0 and a fixed port, a checkpoint
    dir, cluster.servers/workers equal to the pods of each role;
  - every container: image, `cairn-<role> --config /etc/cairn/job.yaml` with
    that file mounted from the ConfigMap, the labels and annotations
    deploy/prometheus/prometheus-kubernetes.yml scrapes by, the metrics port,
    no service links, terminationGracePeriodSeconds equal to
    cluster.shutdown_grace, no liveness probe;
  - daemons: `--listen 0.0.0.0:P`, port P named grpc, grpc startup and
    readiness probes on P, a startup probe that allows a long restore;
  - addresses: CAIRN_COORDINATOR and cluster.coordinator name the coordinator
    pod's DNS name and listen port; servers advertise status.podIP; each
    member's index comes from its pod (completion index or StatefulSet
    ordinal);
  - checkpoint.dir (and cluster.state_dir) mounted from persistent volumes by
    the coordinator and every server, the checkpoints on a ReadWriteMany claim;
  - Jobs: Indexed, restartPolicy Never, a podFailurePolicy sending the
    contract's permanent exit codes to FailJob and the retryable ones to
    Count, disruptions to Ignore;
  - the JobSet: replicated jobs coordinator, servers, workers; DNS hostnames;
    InOrder start; success when the workers succeed; a failure policy that
    fails the JobSet on a podFailurePolicy failure;
  - StatefulSets: a headless Service of their serviceName selecting their pods,
    and cluster.exit_when_done false (a StatefulSet restarts a pod that exits);
and, once: every exit code common/daemon.h defines has a class here and a row
in deploy/kubernetes/README.md.
"""

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k8s_pods  # noqa: E402

# The contract's exit codes (common/daemon.h).
PERMANENT = {1, 2, 6, 8, 9, 10}
RETRYABLE = {3, 4, 5, 7, 11}
RECIPES = {"jobset.yaml": ["jobset.yaml"], "plain/": ["plain"]}
CONFIG_PATH = "/etc/cairn/job.yaml"
IMAGE = "cairn:latest"
MIN_STARTUP_SECONDS = 600     # a restore from a large checkpoint


class Checker:
    def __init__(self, source_dir):
        self.source_dir = source_dir
        self.failures = []
        self.where = ""

    def check(self, ok, message):
        if not ok:
            self.failures.append(f"{self.where}: {message}")
        return ok

    # -- one recipe ------------------------------------------------------------

    def recipe(self, name, rels):
        self.where = name
        files = []
        for rel in rels:
            path = os.path.join(self.source_dir, "deploy/kubernetes", rel)
            if os.path.isdir(path):
                files += sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".yaml"))
            else:
                files.append(path)
        objects = k8s_pods.load_objects(files)
        pods = k8s_pods.expand_pods(objects)
        by_kind = {}
        for o in objects:
            by_kind.setdefault(o["kind"], []).append(o)

        configmaps = [o for o in by_kind.get("ConfigMap", []) if "job.yaml" in (o.get("data") or {})]
        if not self.check(len(configmaps) == 1, f"{len(configmaps)} ConfigMaps with a job.yaml, want 1"):
            return
        cm = configmaps[0]
        job = k8s_pods.job_yaml_settings(cm["data"]["job.yaml"])
        cluster = job.get("cluster", {})
        self.job_file(job)

        roles = {"coordinator": [], "server": [], "worker": []}
        for pod in pods:
            self.check(pod.component in roles, f"{pod.name}: component label {pod.component!r}")
            roles.setdefault(pod.component, []).append(pod)
        self.check(len(roles["coordinator"]) == 1, f"{len(roles['coordinator'])} coordinator pods")
        self.check(len(roles["server"]) == cluster.get("servers", 1),
                   f"{len(roles['server'])} server pods, cluster.servers {cluster.get('servers', 1)}")
        self.check(len(roles["worker"]) == cluster.get("workers", 1),
                   f"{len(roles['worker'])} worker pods, cluster.workers {cluster.get('workers', 1)}")

        dns = k8s_pods.dns_names(objects, pods)
        coord_address = cluster.get("coordinator", "")
        coord_host, _, coord_port = coord_address.rpartition(":")
        if roles["coordinator"]:
            coord = roles["coordinator"][0]
            self.check(dns.get(coord_host) == [coord],
                       f"cluster.coordinator {coord_address}: {coord_host} is not the DNS name of the "
                       f"coordinator pod {coord.name} (names of it: "
                       f"{sorted(n for n, ps in dns.items() if ps == [coord] and n.count('.') <= 1)})")
            listen = self.listen(coord)
            self.check(listen is not None and str(listen) == coord_port,
                       f"cluster.coordinator port {coord_port} is not the coordinator's --listen port {listen}")

        claims = {o["metadata"]["name"]: o for o in by_kind.get("PersistentVolumeClaim", [])}
        instances = set()
        for pod in pods:
            self.where = f"{name} {pod.name}"
            instances.add(pod.labels.get("app.kubernetes.io/instance"))
            self.pod(pod, cm, job, claims, coord_address)
        self.where = name
        self.check(len(instances) == 1, f"pods carry different app.kubernetes.io/instance labels {instances}")

        for o in by_kind.get("Job", []):
            self.where = f"{name} Job/{o['metadata']['name']}"
            self.job_spec(o["spec"])
        for o in by_kind.get("JobSet", []):
            self.where = f"{name} JobSet/{o['metadata']['name']}"
            self.jobset(o)
        for o in by_kind.get("StatefulSet", []):
            self.where = f"{name} StatefulSet/{o['metadata']['name']}"
            self.statefulset(o, by_kind.get("Service", []), pods, cluster)

    def job_file(self, job):
        with open(os.path.join(self.source_dir, "examples/fashion-mnist.yaml"), encoding="utf-8") as f:
            example = k8s_pods.yaml.safe_load(f)
        for section in ("rpc", "consistency", "training"):
            self.check(job.get(section) == example.get(section),
                       f"job.yaml {section} differs from examples/fashion-mnist.yaml's: "
                       f"{job.get(section)} != {example.get(section)}")
        for key in ("servers", "workers", "partitions", "lease_timeout", "heartbeat_interval"):
            self.check(job.get("cluster", {}).get(key) == example["cluster"].get(key),
                       f"job.yaml cluster.{key} differs from examples/fashion-mnist.yaml's")
        metrics = job.get("metrics", {})
        self.check(metrics.get("host") == "0.0.0.0", "metrics.host must be 0.0.0.0 (Prometheus scrapes the pod IP)")
        self.check(isinstance(metrics.get("port"), int) and metrics["port"] > 0,
                   "metrics.port must be a fixed port (the prometheus.io/port annotation)")
        self.check(bool(job.get("checkpoint", {}).get("dir")), "checkpoint.dir must be set")
        self.check("shutdown_grace" in job.get("cluster", {}), "cluster.shutdown_grace must be written out")

    def listen(self, pod):
        args = [str(a) for a in pod.containers()[0].get("command", []) + pod.containers()[0].get("args", [])]
        for i, a in enumerate(args):
            if a == "--listen" and i + 1 < len(args):
                host, _, port = args[i + 1].rpartition(":")
                self.check(host == "0.0.0.0", f"--listen {args[i + 1]}: listen on 0.0.0.0 in a pod")
                return int(port)
        return None

    def mounts(self, pod):
        """{mountPath: volume source} of the pod's container."""
        volumes = {v["name"]: v for v in pod.spec.get("volumes", [])}
        out = {}
        for m in pod.containers()[0].get("volumeMounts", []):
            if m["name"] in pod.claim_volumes:
                out[m["mountPath"].rstrip("/")] = {"claimTemplate": pod.claim_volumes[m["name"]]}
            else:
                out[m["mountPath"].rstrip("/")] = volumes.get(m["name"], {})
        return out

    def pod(self, pod, cm, job, claims, coord_address):
        cluster = job.get("cluster", {})
        containers = pod.containers()
        if not self.check(len(containers) == 1, f"{len(containers)} containers, want 1"):
            return
        c = containers[0]
        role = pod.component
        self.check(c.get("name") == "cairn", f"container name {c.get('name')!r}, want cairn (podFailurePolicy names it)")
        self.check(c.get("image") == IMAGE, f"image {c.get('image')!r}, want {IMAGE} (README.md)")
        self.check(c.get("command") == [f"cairn-{role}"], f"command {c.get('command')}, want [cairn-{role}]")
        args = [str(a) for a in c.get("args", [])]
        self.check(any(args[i:i + 2] == ["--config", CONFIG_PATH] for i in range(len(args))),
                   f"args {args} lack --config {CONFIG_PATH}")
        mounts = self.mounts(pod)
        config_dir = os.path.dirname(CONFIG_PATH)
        self.check((mounts.get(config_dir, {}).get("configMap") or {}).get("name") == cm["metadata"]["name"],
                   f"{config_dir} is not a mount of ConfigMap {cm['metadata']['name']}")

        # Prometheus (deploy/prometheus/prometheus-kubernetes.yml, docs/metrics.md).
        port = job.get("metrics", {}).get("port")
        labels, ann = pod.labels, pod.annotations
        self.check(labels.get("app.kubernetes.io/name") == "cairn", "label app.kubernetes.io/name: cairn missing")
        self.check(bool(labels.get("app.kubernetes.io/instance")), "label app.kubernetes.io/instance missing")
        self.check(ann.get("prometheus.io/scrape") == "true", 'annotation prometheus.io/scrape: "true" missing')
        self.check(ann.get("prometheus.io/port") == str(port),
                   f"annotation prometheus.io/port {ann.get('prometheus.io/port')!r} is not metrics.port {port}")
        self.check(ann.get("prometheus.io/path", "/metrics") == "/metrics", "prometheus.io/path is not /metrics")
        ports = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}
        self.check(ports.get("metrics") == port, f"containerPort metrics {ports.get('metrics')} != metrics.port {port}")

        self.check(pod.spec.get("enableServiceLinks") is False,
                   "enableServiceLinks: false missing (Services would add *_PORT variables)")
        grace = k8s_pods.duration_seconds(cluster.get("shutdown_grace", "30s"))
        self.check(pod.spec.get("terminationGracePeriodSeconds", 30) == grace,
                   f"terminationGracePeriodSeconds {pod.spec.get('terminationGracePeriodSeconds', 30)} "
                   f"does not match cluster.shutdown_grace ({grace:g}s)")
        self.check("livenessProbe" not in c, "a liveness probe could kill a long restore; use the startup probe")

        env = {e["name"]: e for e in c.get("env", [])}
        if role in ("coordinator", "server"):
            listen = self.listen(pod)
            if self.check(listen is not None, "no --listen HOST:PORT"):
                self.check(ports.get("grpc") == listen, f"containerPort grpc {ports.get('grpc')} != --listen port {listen}")
                for kind in ("startupProbe", "readinessProbe"):
                    probe = c.get(kind) or {}
                    self.check((probe.get("grpc") or {}).get("port") == listen,
                               f"{kind} is not a grpc probe on port {listen}")
                start = c.get("startupProbe") or {}
                allowed = start.get("periodSeconds", 10) * start.get("failureThreshold", 3)
                self.check(allowed >= MIN_STARTUP_SECONDS,
                           f"the startup probe allows {allowed}s; a restore may take {MIN_STARTUP_SECONDS}s")
            ckpt = job.get("checkpoint", {}).get("dir", "").rstrip("/")
            vol = mounts.get(ckpt, {})
            claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            if self.check(claim in claims, f"checkpoint.dir {ckpt} is not a mount of a PersistentVolumeClaim"):
                self.check("ReadWriteMany" in claims[claim]["spec"].get("accessModes", []),
                           f"claim {claim} of checkpoint.dir is not ReadWriteMany")
        if role == "coordinator" and cluster.get("state_dir") not in (None, "none"):
            state = cluster["state_dir"].rstrip("/")
            vol = mounts.get(state, {})
            self.check("claimTemplate" in vol or "persistentVolumeClaim" in vol,
                       f"cluster.state_dir {state} is not on a persistent volume")
        if role in ("server", "worker"):
            coord = env.get("CAIRN_COORDINATOR", {}).get("value")
            self.check(coord == coord_address,
                       f"CAIRN_COORDINATOR {coord!r} differs from cluster.coordinator {coord_address!r}")
            index = env.get("CAIRN_INDEX")
            if pod.index_env:
                want = f"metadata.annotations['{k8s_pods.COMPLETION_INDEX_KEY}']"
                self.check(index is None or ((index.get("valueFrom") or {}).get("fieldRef") or {}).get(
                    "fieldPath") == want, f"CAIRN_INDEX must come from {want} (or be left to JOB_COMPLETION_INDEX)")
            elif pod.owner.startswith("StatefulSet/"):
                self.check(index is None, "CAIRN_INDEX set on a StatefulSet pod; the contract takes the ordinal "
                           "of the hostname")
            else:
                self.check(False, f"{pod.owner}: no per-pod index for a {role}")
        if role == "server":
            adv = ((env.get("CAIRN_ADVERTISE_HOST", {}).get("valueFrom") or {}).get("fieldRef") or {})
            self.check(adv.get("fieldPath") == "status.podIP", "CAIRN_ADVERTISE_HOST must come from status.podIP")

    def job_spec(self, spec):
        self.check(spec.get("completionMode") == "Indexed", "completionMode is not Indexed")
        self.check(spec.get("completions") == spec.get("parallelism"),
                   "completions and parallelism differ: every member must run at once")
        tspec = spec["template"]["spec"]
        self.check(tspec.get("restartPolicy") == "Never", "restartPolicy is not Never (podFailurePolicy needs it)")
        rules = (spec.get("podFailurePolicy") or {}).get("rules", [])
        by_action = {}
        disruption = False
        for r in rules:
            if "onExitCodes" in r:
                codes = r["onExitCodes"]
                self.check(codes.get("operator") == "In", f"rule {r['action']}: operator {codes.get('operator')}")
                self.check(codes.get("containerName") == "cairn", f"rule {r['action']}: containerName is not cairn")
                by_action.setdefault(r["action"], set()).update(codes.get("values", []))
            for cond in r.get("onPodConditions", []):
                if cond.get("type") == "DisruptionTarget" and r["action"] == "Ignore":
                    disruption = True
        self.check(by_action.get("FailJob") == PERMANENT,
                   f"FailJob exit codes {sorted(by_action.get('FailJob', []))}, want the permanent {sorted(PERMANENT)}")
        retry = by_action.get("Count", set()) | by_action.get("Ignore", set())
        self.check(retry == RETRYABLE,
                   f"Count/Ignore exit codes {sorted(retry)}, want the retryable {sorted(RETRYABLE)}")
        self.check(disruption, "no Ignore rule for the DisruptionTarget condition (evictions, preemption)")

    def jobset(self, js):
        spec = js["spec"]
        self.check(js["apiVersion"] == "jobset.x-k8s.io/v1alpha2", f"apiVersion {js['apiVersion']}")
        names = [rj["name"] for rj in spec["replicatedJobs"]]
        self.check(names == ["coordinator", "servers", "workers"], f"replicated jobs {names}")
        net = spec.get("network", {})
        self.check(net.get("enableDNSHostnames") is True, "network.enableDNSHostnames is not true")
        self.check(bool(net.get("subdomain")), "network.subdomain is not set")
        self.check((spec.get("startupPolicy") or {}).get("startupPolicyOrder") == "InOrder",
                   "startupPolicy.startupPolicyOrder is not InOrder")
        sp = spec.get("successPolicy") or {}
        self.check(sp.get("operator") == "All" and sp.get("targetReplicatedJobs") == ["workers"],
                   f"successPolicy {sp}, want operator All on [workers]")
        fp = spec.get("failurePolicy") or {}
        self.check(fp.get("maxRestarts", 0) >= 1, "failurePolicy.maxRestarts < 1")
        rules = fp.get("rules", [])
        self.check(bool(rules) and rules[0].get("action") == "FailJobSet"
                   and rules[0].get("onJobFailureReasons") == ["PodFailurePolicy"],
                   "the first failure rule must fail the JobSet on onJobFailureReasons [PodFailurePolicy]")
        where = self.where
        for rj in spec["replicatedJobs"]:
            self.where = f"{where} replicatedJobs[{rj['name']}]"
            self.check(rj.get("replicas", 1) == 1, f"{rj['name']}: replicas {rj.get('replicas')}; the members of a "
                       "role are the pods of one Indexed Job")
            self.job_spec(rj["template"]["spec"])

    def statefulset(self, sts, services, pods, cluster):
        svc_name = sts["spec"].get("serviceName")
        svc = next((s for s in services if s["metadata"]["name"] == svc_name), None)
        if self.check(svc is not None, f"no Service {svc_name} (spec.serviceName)"):
            self.check(svc["spec"].get("clusterIP") == "None", f"Service {svc_name} is not headless")
            mine = [p for p in pods if p.owner == f"StatefulSet/{sts['metadata']['name']}"]
            sel = svc["spec"].get("selector", {})
            self.check(all(all(p.labels.get(k) == v for k, v in sel.items()) for p in mine),
                       f"Service {svc_name} does not select the pods")
        self.check(cluster.get("exit_when_done") is False,
                   "cluster.exit_when_done must be false: a StatefulSet restarts a pod that exits 0")

    # -- once --------------------------------------------------------------------

    def exit_codes(self):
        self.where = "exit codes"
        with open(os.path.join(self.source_dir, "common/daemon.h"), encoding="utf-8") as f:
            codes = {int(v) for v in re.findall(r"constexpr int kExit\w+ = (\d+);", f.read())}
        self.check(bool(codes), "no kExit constants found in common/daemon.h")
        unclassed = codes - PERMANENT - RETRYABLE - {0}
        self.check(not unclassed, f"common/daemon.h defines exit codes {sorted(unclassed)} that the manifests' "
                   "podFailurePolicy does not place")
        with open(os.path.join(self.source_dir, "deploy/kubernetes/README.md"), encoding="utf-8") as f:
            readme = f.read()
        for code in sorted(codes | PERMANENT | RETRYABLE):
            self.check(re.search(rf"^\| {code} \|", readme, re.M) is not None,
                       f"deploy/kubernetes/README.md has no row for exit code {code}")

    def prometheus(self):
        self.where = "deploy/prometheus/prometheus-kubernetes.yml"
        with open(os.path.join(self.source_dir, self.where), encoding="utf-8") as f:
            config = k8s_pods.yaml.safe_load(f)
        relabel = config["scrape_configs"][0]["relabel_configs"]
        keep = {tuple(r["source_labels"]): r["regex"] for r in relabel if r.get("action") == "keep"}
        self.check(keep.get(("__meta_kubernetes_pod_label_app_kubernetes_io_name",)) == "cairn",
                   "no longer keeps pods by app.kubernetes.io/name: cairn; update the manifests' labels")
        self.check(keep.get(("__meta_kubernetes_pod_annotation_prometheus_io_scrape",)) == "true",
                   "no longer keeps pods by the prometheus.io/scrape annotation; update the manifests")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    checker = Checker(os.path.abspath(args.source_dir))
    for name, rels in RECIPES.items():
        try:
            checker.recipe(name, rels)
        except (k8s_pods.ManifestError, KeyError, TypeError) as e:
            checker.failures.append(f"{name}: cannot read the recipe: {type(e).__name__} {e}")
    checker.exit_codes()
    checker.prometheus()
    for f in checker.failures:
        print(f"FAIL: {f}")
    print(f"{len(checker.failures)} failures")
    return 1 if checker.failures else 0


if __name__ == "__main__":
    sys.exit(main())
