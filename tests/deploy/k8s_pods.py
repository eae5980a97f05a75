"""Turns Kubernetes manifests into the pods Kubernetes would run, and runs them
as local processes the way a kubelet would, without a cluster.

Used by k8s_manifest_test.py (which reads the pods) and k8s_run_test.py (which
runs them). What is modelled, after the Kubernetes and JobSet documentation:

  - controllers: a JobSet's replicated jobs (Indexed Jobs; pod hostnames
    <jobset>-<rjob>-<jobIndex>-<podIndex> under the JobSet's subdomain),
    StatefulSets (pods <name>-<ordinal> under spec.serviceName), Jobs (Indexed:
    one pod per completion index) and Deployments;
  - pod metadata the controllers add (completion-index annotation and label,
    JobSet labels, StatefulSet pod-name and pod-index labels), and the
    JOB_COMPLETION_INDEX variable of Indexed Job pods;
  - a container's environment: KUBERNETES_SERVICE_HOST and service links,
    HOSTNAME, envFrom, env with value, fieldRef (downward API),
    configMapKeyRef, and $(VAR) references in env, command and args;
  - volumes: a ConfigMap's keys as files, a persistentVolumeClaim (one folder
    per claim, shared by every pod, as ReadWriteMany), a StatefulSet's
    volumeClaimTemplates (one folder per pod), emptyDir;
  - pod networking (in PodNetwork): each pod in a network and UTS namespace of
    its own with its own IP on one bridge and its own hostname; DNS names of
    pods (hostname.subdomain when a headless Service of that name selects the
    pod, or the JobSet's own) and of headless Services, answered by a DNS
    server on the node's address that every pod's resolv.conf names.

Mount paths cannot be made in the real file system without root, so each
volume is a local folder and every mountPath named in a command line, an
environment value or a ConfigMap file is rewritten to that folder. The
container image is assumed to put the binaries on PATH (deploy/kubernetes/
Dockerfile: /usr/local/bin), so command names are looked up in the binaries
folder given.
"""

import copy
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
import zlib

import yaml

NAMESPACE = "default"
CLUSTER_DOMAIN = "cluster.local"
POD_SUBNET = "10.244.0"          # /24; .1 is the node (this test's namespace)
NODE_IP = POD_SUBNET + ".1"
KUBERNETES_SERVICE_IP = "10.96.0.1"

# Annotation and label of Indexed Job pods, and the JobSet's labels.
COMPLETION_INDEX_KEY = "batch.kubernetes.io/job-completion-index"
JOBSET_KEYS = {
    "name": "jobset.sigs.k8s.io/jobset-name",
    "rjob": "jobset.sigs.k8s.io/replicatedjob-name",
    "job_index": "jobset.sigs.k8s.io/job-index",
    "replicas": "jobset.sigs.k8s.io/replicatedjob-replicas",
    "restart": "jobset.sigs.k8s.io/restart-attempt",
}


class ManifestError(Exception):
    """Something Kubernetes would refuse or that cannot work as written."""


# Cairn's exit codes (common/daemon.h, docs/deploy.md "Exit codes"), for
# messages about how a process ended.
EXIT_CODES = {
    0: "finished", 1: "internal failure", 2: "bad flags, YAML or index",
    3: "port in use", 4: "coordinator unreachable, name unresolved or start-up barrier timed out",
    5: "lost the coordinator", 6: "a worker was lost under on_worker_loss: fail",
    7: "declared dead", 8: "every worker was lost", 9: "a replica group lost every copy",
    10: "the coordinator ended the job as failed", 11: "index held by another live process",
}


def describe_exit(code):
    if code is None:
        return "still running"
    if code < 0:
        return f"killed by signal {-code}"
    return f"exit {code} ({EXIT_CODES.get(code, 'unknown')})"


def load_objects(paths):
    """Every object of the YAML files, each with `_file` set to its file."""
    objects = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for doc in yaml.safe_load_all(f):
                if doc is None:
                    continue
                doc["_file"] = os.path.basename(path)
                objects.append(doc)
    return objects


def _suffix(rng, n=5):
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(n))


def _matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


class Pod:
    """One pod as its controller would create it."""

    def __init__(self, *, owner, group, index, name, hostname, subdomain, template,
                 labels, annotations, index_env, claim_volumes=None):
        self.owner = owner            # "JobSet/cairn", "StatefulSet/cairn-server", ...
        self.group = group            # replicated job, StatefulSet, Job or Deployment name
        self.index = index            # completion index or ordinal (None: none)
        self.name = name
        self.hostname = hostname
        self.subdomain = subdomain
        self.template = template
        self.spec = template.get("spec", {})
        self.labels = labels
        self.annotations = annotations
        self.index_env = index_env    # add JOB_COMPLETION_INDEX (Indexed Job)
        self.claim_volumes = claim_volumes or {}  # volumeClaimTemplates: volume -> claim
        self.after = []               # pods that must be ready before this one starts
        self.ip = None

    @property
    def component(self):
        return self.labels.get("app.kubernetes.io/component", self.group)

    def containers(self):
        return list(self.spec.get("containers", []))

    def __repr__(self):
        return f"Pod({self.name})"


def _pod_metadata(template, extra_labels, extra_annotations):
    meta = template.get("metadata", {}) or {}
    labels = dict(meta.get("labels", {}) or {})
    labels.update(extra_labels)
    annotations = dict(meta.get("annotations", {}) or {})
    annotations.update(extra_annotations)
    return labels, annotations


def expand_pods(objects, seed=1):
    """The pods the controllers among `objects` create, in start order, with
    `after` set to what each one waits for (JobSet InOrder, StatefulSet
    OrderedReady)."""
    rng = random.Random(seed)
    pods = []
    for obj in objects:
        kind = obj.get("kind")
        meta = obj.get("metadata", {})
        spec = obj.get("spec", {})
        if kind == "JobSet":
            js = meta["name"]
            network = spec.get("network", {}) or {}
            dns = network.get("enableDNSHostnames", True)
            subdomain = network.get("subdomain") or js
            in_order = (spec.get("startupPolicy", {}) or {}).get("startupPolicyOrder") == "InOrder"
            previous = []
            for rj in spec["replicatedJobs"]:
                job_spec = rj["template"]["spec"]
                if job_spec.get("completionMode", "Indexed") != "Indexed":
                    raise ManifestError(f"JobSet {js}: replicated job {rj['name']} is not Indexed")
                completions = job_spec.get("completions", 1)
                parallelism = job_spec.get("parallelism", 1)
                if parallelism != completions:
                    raise ManifestError(f"JobSet {js}: replicated job {rj['name']}: parallelism "
                                        f"{parallelism} != completions {completions}: not every "
                                        "member would run at once")
                replicas = rj.get("replicas", 1)
                group = []
                for j in range(replicas):
                    job_name = f"{js}-{rj['name']}-{j}"
                    for i in range(completions):
                        base = f"{job_name}-{i}"
                        common = {
                            JOBSET_KEYS["name"]: js, JOBSET_KEYS["rjob"]: rj["name"],
                            JOBSET_KEYS["job_index"]: str(j), JOBSET_KEYS["replicas"]: str(replicas),
                            JOBSET_KEYS["restart"]: "0", COMPLETION_INDEX_KEY: str(i),
                        }
                        labels, annotations = _pod_metadata(
                            job_spec["template"],
                            {**common, "batch.kubernetes.io/job-name": job_name, "job-name": job_name},
                            common)
                        template = copy.deepcopy(job_spec["template"])
                        # The JobSet webhook's default.
                        template.setdefault("spec", {}).setdefault("restartPolicy", "OnFailure")
                        pod = Pod(owner=f"JobSet/{js}", group=rj["name"], index=i,
                                  name=f"{base}-{_suffix(rng)}", hostname=base if dns else None,
                                  subdomain=subdomain if dns else None, template=template,
                                  labels=labels, annotations=annotations, index_env=True)
                        if in_order:
                            pod.after = list(previous)
                        group.append(pod)
                pods.extend(group)
                previous = group
        elif kind == "StatefulSet":
            name = meta["name"]
            replicas = spec.get("replicas", 1)
            ordered = spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady"
            claims = [c["metadata"]["name"] for c in spec.get("volumeClaimTemplates", [])]
            prev = None
            for o in range(replicas):
                pod_name = f"{name}-{o}"
                labels, annotations = _pod_metadata(
                    spec["template"],
                    {"statefulset.kubernetes.io/pod-name": pod_name, "apps.kubernetes.io/pod-index": str(o)},
                    {})
                pod = Pod(owner=f"StatefulSet/{name}", group=name, index=o, name=pod_name,
                          hostname=pod_name, subdomain=spec.get("serviceName"),
                          template=copy.deepcopy(spec["template"]), labels=labels,
                          annotations=annotations, index_env=False,
                          claim_volumes={c: f"{c}-{pod_name}" for c in claims})
                if ordered and prev is not None:
                    pod.after = [prev]
                prev = pod
                pods.append(pod)
        elif kind == "Job":
            name = meta["name"]
            indexed = spec.get("completionMode", "NonIndexed") == "Indexed"
            completions = spec.get("completions", 1)
            parallelism = spec.get("parallelism", 1)
            if parallelism != completions:
                raise ManifestError(f"Job {name}: parallelism {parallelism} != completions {completions}")
            for i in range(completions):
                pod_name = f"{name}-{i}-{_suffix(rng)}" if indexed else f"{name}-{_suffix(rng)}"
                extra = {"batch.kubernetes.io/job-name": name, "job-name": name}
                ann = {}
                if indexed:
                    extra[COMPLETION_INDEX_KEY] = str(i)
                    ann[COMPLETION_INDEX_KEY] = str(i)
                labels, annotations = _pod_metadata(spec["template"], extra, ann)
                tspec = spec["template"].get("spec", {})
                pods.append(Pod(owner=f"Job/{name}", group=name, index=i if indexed else None,
                                name=pod_name, hostname=tspec.get("hostname", pod_name[:63]),
                                subdomain=tspec.get("subdomain"),
                                template=copy.deepcopy(spec["template"]), labels=labels,
                                annotations=annotations, index_env=indexed))
        elif kind == "Deployment":
            name = meta["name"]
            rs = _suffix(rng, 10)
            for _ in range(spec.get("replicas", 1)):
                pod_name = f"{name}-{rs}-{_suffix(rng)}"
                labels, annotations = _pod_metadata(spec["template"], {"pod-template-hash": rs}, {})
                pods.append(Pod(owner=f"Deployment/{name}", group=name, index=None, name=pod_name,
                                hostname=pod_name, subdomain=None,
                                template=copy.deepcopy(spec["template"]), labels=labels,
                                annotations=annotations, index_env=False))
    return pods


def dns_names(objects, pods):
    """{name: [pod, ...]} of every DNS name the cluster DNS would answer for
    the pods: <hostname>.<subdomain>[.<ns>.svc.<domain>] when a headless
    Service named <subdomain> selects the pod (a JobSet brings its own), and
    <service>[.<ns>[.svc.<domain>]] for each headless Service."""
    services = [o for o in objects if o.get("kind") == "Service"]
    jobset_services = {}
    for o in objects:
        if o.get("kind") == "JobSet":
            net = o["spec"].get("network", {}) or {}
            if net.get("enableDNSHostnames", True):
                jobset_services[net.get("subdomain") or o["metadata"]["name"]] = o["metadata"]["name"]
    names = {}

    def add(name, pod):
        for full in (name, f"{name}.{NAMESPACE}", f"{name}.{NAMESPACE}.svc",
                     f"{name}.{NAMESPACE}.svc.{CLUSTER_DOMAIN}"):
            names.setdefault(full, [])
            if pod not in names[full]:
                names[full].append(pod)

    for svc in services:
        if svc["spec"].get("clusterIP") != "None":
            continue
        selector = svc["spec"].get("selector", {})
        for pod in pods:
            if _matches(selector, pod.labels):
                add(svc["metadata"]["name"], pod)
                if pod.hostname and pod.subdomain == svc["metadata"]["name"]:
                    add(f"{pod.hostname}.{pod.subdomain}", pod)
    for sub, js in jobset_services.items():
        for pod in pods:
            if pod.labels.get(JOBSET_KEYS["name"]) == js and pod.subdomain == sub:
                add(sub, pod)
                add(f"{pod.hostname}.{sub}", pod)
    return names


def expand_refs(text, env):
    """Kubernetes' $(VAR) expansion: $(NAME) of a defined variable becomes its
    value, $$ becomes $, anything else stays as written."""
    out = []
    i = 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("$(", i):
            end = text.find(")", i + 2)
            name = text[i + 2:end] if end >= 0 else None
            if name is not None and name in env:
                out.append(env[name])
                i = end + 1
            else:
                out.append(text[i:i + 2])
                i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


_FIELD_REF = re.compile(r"^metadata\.(labels|annotations)\['([^']+)'\]$")


def field_ref(pod, path):
    """The value the downward API gives for fieldRef.fieldPath `path`."""
    m = _FIELD_REF.match(path)
    if m:
        source = pod.labels if m.group(1) == "labels" else pod.annotations
        return source.get(m.group(2), "")
    simple = {
        "metadata.name": pod.name,
        "metadata.namespace": NAMESPACE,
        "metadata.uid": f"00000000-0000-4000-8000-{zlib.crc32(pod.name.encode()):012d}",
        "spec.nodeName": "node-0",
        "spec.serviceAccountName": pod.spec.get("serviceAccountName", "default"),
        "status.hostIP": NODE_IP,
        "status.hostIPs": NODE_IP,
        "status.podIP": pod.ip,
        "status.podIPs": pod.ip,
    }
    if path not in simple:
        raise ManifestError(f"{pod.name}: fieldRef.fieldPath {path!r} is not one the downward API supports")
    return simple[path]


class Volumes:
    """Local folders standing in for the pods' volumes."""

    def __init__(self, root, objects, pods, edit_configmap=None):
        self.root = root
        self.configmaps = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "ConfigMap"}
        self.claims = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "PersistentVolumeClaim"}
        self.edit_configmap = edit_configmap
        self.mount_map = {}     # mountPath -> folder, the same in every pod
        self.pod_mounts = {}    # pod name -> [(mountPath, folder)]
        self._plan(pods)
        self._write_configmaps()

    def _source_folder(self, pod, volume):
        name = volume["name"]
        if "configMap" in volume:
            cm = volume["configMap"]["name"]
            if cm not in self.configmaps and not volume["configMap"].get("optional"):
                raise ManifestError(f"{pod.name}: volume {name}: no ConfigMap {cm}")
            return os.path.join(self.root, "configmap", cm), ("configMap", cm, volume["configMap"].get("items"))
        if "persistentVolumeClaim" in volume:
            claim = volume["persistentVolumeClaim"]["claimName"]
            if claim not in self.claims:
                raise ManifestError(f"{pod.name}: volume {name}: no PersistentVolumeClaim {claim}")
            return os.path.join(self.root, "pvc", claim), ("pvc", claim, None)
        if "emptyDir" in volume:
            return os.path.join(self.root, "emptydir", pod.name, name), ("emptyDir", None, None)
        raise ManifestError(f"{pod.name}: volume {name}: only configMap, persistentVolumeClaim "
                            "and emptyDir volumes are modelled")

    def _plan(self, pods):
        self.configmap_items = {}
        seen = {}
        for pod in pods:
            volumes = {v["name"]: v for v in pod.spec.get("volumes", [])}
            mounts = []
            for c in pod.spec.get("initContainers", []) + pod.spec.get("containers", []):
                for m in c.get("volumeMounts", []):
                    if m["name"] in pod.claim_volumes:
                        folder = os.path.join(self.root, "pvc", pod.claim_volumes[m["name"]])
                        key = ("claimTemplate", pod.claim_volumes[m["name"]])
                    elif m["name"] in volumes:
                        folder, src = self._source_folder(pod, volumes[m["name"]])
                        key = src[:2]
                        if src[0] == "configMap":
                            self.configmap_items[src[1]] = src[2]
                    else:
                        raise ManifestError(f"{pod.name}: volumeMount {m['name']} names no volume")
                    if m.get("subPath"):
                        folder = os.path.join(folder, m["subPath"])
                    path = m["mountPath"].rstrip("/") or "/"
                    if path in seen and seen[path] != (key, folder):
                        raise ManifestError(f"mountPath {path} is a different volume in different pods; "
                                            "the local run needs one folder per mountPath")
                    seen[path] = (key, folder)
                    os.makedirs(folder, exist_ok=True)
                    self.mount_map[path] = folder
                    mounts.append((path, folder))
            self.pod_mounts[pod.name] = mounts

    def _write_configmaps(self):
        for name, items in self.configmap_items.items():
            cm = self.configmaps.get(name)
            if cm is None:
                continue
            data = dict(cm.get("data", {}) or {})
            if self.edit_configmap:
                data = self.edit_configmap(name, data)
            folder = os.path.join(self.root, "configmap", name)
            keys = [(it["key"], it["path"]) for it in items] if items else [(k, k) for k in data]
            for key, rel in keys:
                if key not in data:
                    raise ManifestError(f"ConfigMap {name} has no key {key}")
                target = os.path.join(folder, rel)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "w", encoding="utf-8") as f:
                    f.write(self.map_paths(data[key]))

    def map_paths(self, text):
        """`text` with each mountPath (at the start, after = : , space or a
        quote, followed by / or the end of a word) replaced by its folder."""
        for path in sorted(self.mount_map, key=len, reverse=True):
            pattern = r"(^|(?<=[=:,\s\"']))" + re.escape(path) + r"(?=/|$|[\s\"',])"
            text = re.sub(pattern, lambda _m, p=path: self.mount_map[p], text, flags=re.M)
        return text


def container_env(pod, container, objects, volumes, base_env):
    """The environment the kubelet gives `container` of `pod`, as a dict."""
    env = dict(base_env)
    env["HOSTNAME"] = pod.hostname or pod.name
    env["KUBERNETES_SERVICE_HOST"] = KUBERNETES_SERVICE_IP
    env["KUBERNETES_SERVICE_PORT"] = "443"
    env["KUBERNETES_SERVICE_PORT_HTTPS"] = "443"
    env["KUBERNETES_PORT"] = f"tcp://{KUBERNETES_SERVICE_IP}:443"
    if pod.spec.get("enableServiceLinks", True):
        for svc in (o for o in objects if o.get("kind") == "Service"):
            if svc["spec"].get("clusterIP") == "None":
                continue
            prefix = svc["metadata"]["name"].upper().replace("-", "_")
            ports = svc["spec"].get("ports", [])
            ip = "10.96.0.100"
            env[f"{prefix}_SERVICE_HOST"] = ip
            if ports:
                env[f"{prefix}_SERVICE_PORT"] = str(ports[0]["port"])
                env[f"{prefix}_PORT"] = f"tcp://{ip}:{ports[0]['port']}"
    configmaps = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "ConfigMap"}

    def configmap_value(ref):
        cm = configmaps.get(ref["name"])
        if cm is None or ref["key"] not in (cm.get("data") or {}):
            if ref.get("optional"):
                return None
            raise ManifestError(f"{pod.name}: configMapKeyRef {ref['name']}/{ref['key']} does not exist")
        return cm["data"][ref["key"]]

    for src in container.get("envFrom", []):
        if "configMapRef" in src:
            cm = configmaps.get(src["configMapRef"]["name"])
            if cm is None:
                if src["configMapRef"].get("optional"):
                    continue
                raise ManifestError(f"{pod.name}: envFrom names no ConfigMap {src['configMapRef']['name']}")
            for k, v in (cm.get("data") or {}).items():
                env[src.get("prefix", "") + k] = v
        else:
            raise ManifestError(f"{pod.name}: envFrom: only configMapRef is modelled")
    entries = list(container.get("env", []))
    if pod.index_env and not any(e["name"] == "JOB_COMPLETION_INDEX" for e in entries):
        # The Job controller adds it to every container of an Indexed Job.
        entries.append({"name": "JOB_COMPLETION_INDEX",
                        "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{COMPLETION_INDEX_KEY}']"}}})
    for e in entries:
        if "valueFrom" in e:
            vf = e["valueFrom"]
            if "fieldRef" in vf:
                value = field_ref(pod, vf["fieldRef"]["fieldPath"])
            elif "configMapKeyRef" in vf:
                value = configmap_value(vf["configMapKeyRef"])
                if value is None:
                    continue
            else:
                raise ManifestError(f"{pod.name}: env {e['name']}: only fieldRef and configMapKeyRef are modelled")
        else:
            value = expand_refs(str(e.get("value", "")), env)
        env[e["name"]] = volumes.map_paths(value)
    return env


def container_argv(pod, container, env, volumes, bin_dir):
    """command + args with $(VAR) expanded, mount paths mapped and the
    executable found in `bin_dir` (the image's /usr/local/bin) or on PATH."""
    if "command" not in container:
        raise ManifestError(f"{pod.name}/{container['name']}: no command: the image's entry point "
                            "is not modelled")
    argv = [volumes.map_paths(expand_refs(str(a), env))
            for a in list(container["command"]) + list(container.get("args", []))]
    exe = argv[0]
    if exe.startswith("/usr/local/bin/"):
        exe = exe[len("/usr/local/bin/"):]
    if "/" not in exe:
        local = os.path.join(bin_dir, exe)
        found = local if os.access(local, os.X_OK) else shutil.which(exe)
        if not found:
            raise ManifestError(f"{pod.name}: command {argv[0]} is neither in {bin_dir} nor on PATH")
        exe = found
    argv[0] = exe
    return argv


# ---------------------------------------------------------------------------
# Running pods: network namespaces, probes.

# A command prefix: the command gets SIGKILL when this test's process ends,
# so nothing outlives a test that was killed (PR_SET_PDEATHSIG, kept across
# exec). A prefix rather than a preexec_fn: a preexec_fn makes Python fork
# this multi-threaded process (gRPC's threads, for the probes) and run Python
# in the child before exec, where gRPC's fork handlers can hang or abort;
# without one, subprocess starts children with vfork and exec only.
DIE_WITH_PARENT = ["/usr/bin/setpriv", "--pdeathsig", "KILL", "--"]


def _run(argv, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=20, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


class PodNetwork:
    """Pods' network and UTS namespaces on a bridge, inside the private
    network namespace this test runs in (see enter_private_namespaces)."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.holders = {}
        self.next_ip = 2
        _run(["ip", "link", "set", "lo", "up"])
        _run(["ip", "link", "add", "cbr0", "type", "bridge"])
        _run(["ip", "addr", "add", f"{NODE_IP}/24", "dev", "cbr0"])
        _run(["ip", "link", "set", "cbr0", "up"])

    def add_pod(self, pod):
        holder = subprocess.Popen(DIE_WITH_PARENT + ["unshare", "--net", "--uts", "sleep", "100000"],
                                  stdin=subprocess.DEVNULL)
        own = os.readlink("/proc/self/ns/net")
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                if os.readlink(f"/proc/{holder.pid}/ns/net") != own:
                    break
            except OSError:
                pass
            time.sleep(0.01)
        else:
            raise RuntimeError("a pod's network namespace did not appear")
        n = len(self.holders)
        pod.ip = f"{POD_SUBNET}.{self.next_ip}"
        self.next_ip += 1
        host_end, pod_end = f"cvh{n}", f"cvp{n}"
        _run(["ip", "link", "add", host_end, "type", "veth", "peer", "name", pod_end])
        _run(["ip", "link", "set", pod_end, "netns", str(holder.pid)])
        inside = ["nsenter", f"--net=/proc/{holder.pid}/ns/net"]
        _run(inside + ["ip", "link", "set", pod_end, "name", "eth0"])
        _run(inside + ["ip", "addr", "add", f"{pod.ip}/24", "dev", "eth0"])
        _run(inside + ["ip", "link", "set", "eth0", "up"])
        _run(inside + ["ip", "link", "set", "lo", "up"])
        _run(["ip", "link", "set", host_end, "master", "cbr0", "up"])
        _run(["nsenter", f"--uts=/proc/{holder.pid}/ns/uts", "hostname", (pod.hostname or pod.name)[:63]])
        self.holders[pod.name] = holder

    def enter_prefix(self, pod):
        pid = self.holders[pod.name].pid
        return ["nsenter", f"--net=/proc/{pid}/ns/net", f"--uts=/proc/{pid}/ns/uts", "--"]

    def write_dns(self, names):
        """The cluster DNS as pods see it: a DNS server on the node's address
        answering A queries for `names` ({name: [pod, ...]}), named in an
        /etc/resolv.conf with the search path and ndots of a pod, which is
        bind-mounted over the real one (with an /etc/hosts of localhost only)
        in this test's private mount namespace."""
        if not os.path.exists("/etc/resolv.conf"):
            raise RuntimeError("this machine has no /etc/resolv.conf to stand in for")
        self.dns = DnsServer(NODE_IP, {n: [p.ip for p in pods] for n, pods in names.items()})
        hosts = os.path.join(self.workdir, "hosts")
        with open(hosts, "w", encoding="utf-8") as f:
            f.write("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
        resolv = os.path.join(self.workdir, "resolv.conf")
        with open(resolv, "w", encoding="utf-8") as f:
            f.write(f"nameserver {NODE_IP}\n"
                    f"search {NAMESPACE}.svc.{CLUSTER_DOMAIN} svc.{CLUSTER_DOMAIN} {CLUSTER_DOMAIN}\n"
                    "options ndots:5\n")
        _run(["mount", "--bind", hosts, "/etc/hosts"])
        _run(["mount", "--bind", resolv, "/etc/resolv.conf"])

    def close(self):
        if getattr(self, "dns", None):
            self.dns.close()
        for holder in self.holders.values():
            holder.kill()
            holder.wait()


class DnsServer:
    """A DNS server for A records of a fixed table, on UDP port 53 of
    `address`, in a thread: NXDOMAIN for unknown names, no data for other
    record types of known names."""

    def __init__(self, address, table):
        self.table = {k.lower().rstrip("."): v for k, v in table.items()}
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((address, 53))
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _answer(self, query):
        if len(query) < 12:
            return None
        qid, flags, qdcount = struct.unpack(">HHH", query[:6])
        if qdcount != 1 or flags & 0x8000:
            return None
        labels, i = [], 12
        while i < len(query) and query[i] != 0:
            n = query[i]
            labels.append(query[i + 1:i + 1 + n].decode("ascii", "replace"))
            i += 1 + n
        if i + 5 > len(query):
            return None
        qtype, qclass = struct.unpack(">HH", query[i + 1:i + 5])
        question = query[12:i + 5]
        name = ".".join(labels).lower()
        ips = self.table.get(name)
        answers = []
        rcode = 0
        if ips is None:
            rcode = 3
        elif qtype == 1 and qclass == 1:
            for ip in ips:
                answers.append(struct.pack(">HHHIH", 0xC00C, 1, 1, 5, 4) + socket.inet_aton(ip))
        header = struct.pack(">HHHHHH", qid, 0x8400 | (flags & 0x0100) | 0x0080 | rcode, 1,
                             len(answers), 0, 0)
        return header + question + b"".join(answers)

    def _serve(self):
        while True:
            try:
                query, peer = self.sock.recvfrom(4096)
            except OSError:
                return
            reply = self._answer(query)
            if reply is not None:
                try:
                    self.sock.sendto(reply, peer)
                except OSError:
                    pass

    def close(self):
        self.sock.close()


def enter_private_namespaces(marker="CAIRN_K8S_PRIVATE_NS"):
    """Re-executes this script under `unshare -rnm` (a user, network and mount
    namespace of its own: the machine's network and files stay untouched, no
    privilege needed) unless already there. Returns None inside; outside, a
    reason to skip when this machine permits no such namespaces."""
    if os.environ.get(marker) == "1":
        return None
    for tool in ("unshare", "nsenter", "ip", "mount"):
        if shutil.which(tool) is None:
            return f"{tool} is missing (util-linux, iproute2)"
    probe = subprocess.run(["unshare", "-rnm", "--", "ip", "link", "add", "cprobe", "type", "bridge"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return f"this machine permits no private network namespace: {probe.stderr.strip()}"
    os.environ[marker] = "1"
    os.execvp("unshare", ["unshare", "-rnm", "--", sys.executable] + sys.argv)
    return None  # not reached


def grpc_health(address, service="", timeout=2.0):
    """grpc.health.v1.Health/Check as a kubelet's grpc probe sends it: the
    status name (SERVING, NOT_SERVING, ...) or an error string."""
    import grpc  # python3-grpcio
    # HealthCheckRequest: field 1, the service name (empty: the whole server).
    request = b"\x0a" + bytes([len(service)]) + service.encode() if service else b""
    names = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}
    with grpc.insecure_channel(address, options=[("grpc.enable_http_proxy", 0)]) as channel:
        check = channel.unary_unary("/grpc.health.v1.Health/Check",
                                    request_serializer=None, response_deserializer=None)
        try:
            reply = check(request, timeout=timeout)
        except grpc.RpcError as e:
            return f"error {e.code().name}: {e.details()}"
    status = 0
    if len(reply) >= 2 and reply[0] == 0x08:
        status = reply[1]
    return names.get(status, f"status {status}")


def http_get(url, timeout=2.0):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=timeout) as r:
        return r.status, r.read().decode("utf-8", "replace")


def tcp_open(host, port, timeout=1.0):
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def probe_once(pod, container, probe):
    """One run of a probe against the pod: (ok, detail)."""
    if "grpc" in probe:
        port = probe["grpc"]["port"]
        status = grpc_health(f"{pod.ip}:{port}", probe["grpc"].get("service", ""))
        return status == "SERVING", f"grpc.health.v1 Check on {pod.ip}:{port}: {status}"
    if "tcpSocket" in probe:
        port = _named_port(container, probe["tcpSocket"]["port"])
        ok = tcp_open(pod.ip, port)
        return ok, f"TCP {pod.ip}:{port} {'open' if ok else 'closed'}"
    if "httpGet" in probe:
        port = _named_port(container, probe["httpGet"]["port"])
        url = f"http://{pod.ip}:{port}{probe['httpGet'].get('path', '/')}"
        try:
            status, _ = http_get(url)
        except OSError as e:
            return False, f"GET {url}: {e}"
        return 200 <= status < 400, f"GET {url}: {status}"
    raise ManifestError(f"{pod.name}: probe kind not modelled: {sorted(probe)}")


def _named_port(container, port):
    if isinstance(port, int):
        return port
    for p in container.get("ports", []):
        if p.get("name") == port:
            return p["containerPort"]
    raise ManifestError(f"container {container['name']} has no port named {port}")


def job_yaml_settings(text):
    """The parsed job file of a ConfigMap."""
    return yaml.safe_load(text) or {}


def duration_seconds(text):
    """A Cairn duration (500ms, 30s, 2m, 1h) in seconds."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)", str(text))
    if not m:
        raise ValueError(f"not a duration: {text!r}")
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def terminate(proc, grace):
    """SIGTERM, then SIGKILL after `grace` seconds, as a kubelet stops a
    container; returns the exit status (negative: killed by that signal)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode

