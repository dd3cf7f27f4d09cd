"""A real Kubernetes cluster on this machine, without a container: etcd, kube-apiserver, kube-controller-manager
and kube-scheduler v1.37.2, KWOK v0.8.0 for the nodes and metrics-server v0.9.0.

``ControlPlane(home).start()`` starts, on loopback only:

* etcd (``--unsafe-no-fsync``: a test cluster), its data in ``home/etcd`` (removed by ``stop``);
* kube-apiserver with TLS, RBAC (``--authorization-mode=Node,RBAC``), service accounts (bound tokens signed by
  ``sa.key``) and the aggregation layer (front-proxy client certificate). Its service CIDR is a /24 inside
  127.0.0.0/8 (``127.A.B.0/24``, A and B random per run): a Service's cluster IP is then a loopback address this
  machine answers itself, so the aggregator's proxy to metrics-server's Service (cluster IP + port) stays on this
  machine: metrics-server listens on that address. Endpoints cannot hold loopback addresses (validation refuses
  them), which is why ``--enable-aggregator-routing`` is not used;
* kube-controller-manager with the deployment, replicaset, serviceaccount, serviceaccount-token, namespace,
  garbage-collector and node-lifecycle controllers (``controllers=`` adds e.g. ``horizontalpodautoscaling``), each
  with its own service-account identity (``--use-service-account-credentials``), as kubeadm runs it;
* kube-scheduler (its default profile: NodeResourcesFit, LeastAllocated scoring), which binds pods to nodes;
* KWOK (``kwok``, no CRDs: its stages and metrics are the files in ``controlplane/kwok``) managing ``nodes`` Nodes
  (``kwok-node-0``...; allocatable ``node_cpu``, ``node_memory``, ``node_pods``): it makes a bound pod Running and
  Ready, deletes a pod being deleted, and serves each node's kubelet ``/metrics/resource`` from the pods' usage
  (the annotations ``kwok.x-k8s.io/usage-cpu`` and ``kwok.x-k8s.io/usage-memory``);
* with ``metrics="metrics-server"`` (the default), metrics-server, registered as ``v1beta1.metrics.k8s.io``,
  scraping KWOK's endpoints every ``metric_resolution`` seconds with its manifests' flags and RBAC; with
  ``metrics="fixture"``, ``MetricsFixture`` instead (metrics.k8s.io, custom.metrics.k8s.io and
  external.metrics.k8s.io answering exact values set by a test at the instant of a read: ``metrics.py``).

``pods`` (a ``PodWatch``) keeps every pod as the API serves it. ``admin_kubeconfig`` is a kubeconfig with a
``system:masters`` client certificate.

Children get ``PR_SET_PDEATHSIG`` (SIGKILL): they die with the process (the thread) that started them.
Errors: ``ControlPlaneError`` (one line, with the log file to read).
"""

from __future__ import annotations

import ctypes
import json
import os
import random
import shutil
import signal
import ssl
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import httpx2
import yaml

from .aggregation import register_service
from .build import CONTROL_PLANE, KUBERNETES_VERSION, bin_dir
from .net import free_port
from .pki import METRICS_SERVER_SERVICE, Pki, make_pki

DEFAULT_CONTROLLERS = ("deployment", "replicaset", "serviceaccount", "serviceaccount-token", "namespace",
                       "garbagecollector", "nodelifecycle")
"""kube-controller-manager's ``--controllers``: the workload controllers, service accounts, namespaces, garbage
collection and node lifecycle (which lifts the ``node.kubernetes.io/not-ready`` taint kube-apiserver's
TaintNodesByCondition admission puts on a new Node once KWOK reports it Ready, as on any cluster)."""
KWOK_CONFIG = Path(__file__).resolve().parent / "kwok"
MANIFESTS = Path(__file__).resolve().parent / "manifests"
METRICS_SOURCES = ("metrics-server", "fixture")
NODE_PREFIX = "kwok-node-"
ADAPTER_APIS = (("custom.metrics.k8s.io", "v1beta2", 200), ("custom.metrics.k8s.io", "v1beta1", 100),
                ("external.metrics.k8s.io", "v1beta1", 100))
"""(group, version, versionPriority) of the APIServices prometheus-adapter serves."""
METRIC_RESOLUTION = 15
"""metrics-server's ``--metric-resolution`` in its released manifests (components.yaml), seconds."""


class ControlPlaneError(RuntimeError):
    """A component did not start or answer (one line, naming the log to read)."""


def _die_with_parent() -> None:  # runs in the child between fork and exec
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.setpgid(0, 0)  # a Ctrl-C of the terminal reaches the owner, which stops the children in order


@dataclass
class Component:
    """One child process: its command line, log file and process."""

    name: str
    argv: list[str]
    log: Path
    proc: Optional[subprocess.Popen] = None

    def start(self) -> None:
        with open(self.log, "ab") as out:
            out.write(f"--- start {time.strftime('%H:%M:%S')} {' '.join(self.argv)}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         preexec_fn=_die_with_parent, close_fds=True)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 20.0) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def tail(self, lines: int = 5) -> str:
        try:
            text = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(text[-lines:])


@dataclass
class ControlPlane:
    """etcd, kube-apiserver and kube-controller-manager under ``home`` (certificates, data, logs, kubeconfigs).

    ``apiserver_args``: extra kube-apiserver flags (e.g. ``--feature-gates=...``), ``controllers``: the
    controller-manager's ``--controllers``, ``controller_manager_args``: extra flags for it."""

    home: Path
    version: str = KUBERNETES_VERSION
    controllers: tuple[str, ...] = DEFAULT_CONTROLLERS
    apiserver_args: tuple[str, ...] = ()
    controller_manager_args: tuple[str, ...] = ()
    start_timeout: float = 180.0
    audit: bool = True
    service_cidr: Optional[str] = None
    etcd_seed: Optional[Path] = None
    nodes: int = 2
    node_cpu: str = "16"
    node_memory: str = "64Gi"
    node_pods: int = 110
    metrics: str = "metrics-server"
    metric_resolution: int = METRIC_RESOLUTION
    components: dict[str, Component] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.home = Path(self.home)
        self.bin = bin_dir(self.version)
        rnd = random.Random()
        self.service_cidr = self.service_cidr or f"127.{rnd.randrange(64, 250)}.{rnd.randrange(1, 250)}.0/24"
        base = self.service_cidr.rsplit(".", 1)[0]
        self.service_ip = f"{base}.1"  # the kubernetes Service's address
        self.metrics_ip = f"{base}.200"  # metrics-server's (or the metrics fixture's) Service: a fixed cluster IP
        self.adapter_ip = f"{base}.201"  # prometheus-adapter's Service
        self.etcd_port, self.etcd_peer_port = free_port(), free_port()
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.pki: Optional[Pki] = None
        self.pods = None
        self.fixture = None
        if self.metrics not in METRICS_SOURCES:
            raise ValueError(f"metrics={self.metrics!r}: one of {', '.join(METRICS_SOURCES)}")
        if not 1 <= self.nodes <= 1000:
            raise ValueError(f"nodes={self.nodes}: between 1 and 1000")
        if not 10 <= self.metric_resolution <= 600:  # metrics-server refuses under 10 s
            raise ValueError(f"metric_resolution={self.metric_resolution}: between 10 and 600 seconds")
        self.kwok_port = free_port()

    # ----- paths ---------------------------------------------------------------------------------------
    @property
    def admin_kubeconfig(self) -> Path:
        return self.home / "admin.kubeconfig"

    @property
    def kubectl(self) -> Path:
        return self.bin / "kubectl"

    def log(self, component: str) -> Path:
        return self.home / "logs" / f"{component}.log"

    def audit_events(self) -> list[dict]:
        """The audit log's events so far (``ResponseComplete`` stage), oldest first."""
        path = self.home / "logs" / "audit.log"
        if not path.exists():
            return []
        out = []
        for line in path.read_text(errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:  # a line being written
                continue
            if event.get("stage") == "ResponseComplete":
                out.append(event)
        return out

    # ----- start and stop ------------------------------------------------------------------------------
    def start(self, *, data_plane: bool = True) -> "ControlPlane":
        """Start etcd, kube-apiserver and kube-controller-manager and wait until each answers; then (with
        ``data_plane``) kube-scheduler, KWOK and its nodes, and the metrics source (metrics-server or the
        fixture), waiting until the nodes are Ready and metrics.k8s.io is Available. Raises ``ControlPlaneError``."""
        needed = CONTROL_PLANE if data_plane else ("etcd", "kube-apiserver", "kube-controller-manager", "kubectl")
        for name in needed:
            if not (self.bin / name).is_file():
                raise ControlPlaneError(f"{self.bin / name} is missing: build the control plane first "
                                        "(python -m controlplane build)")
        (self.home / "logs").mkdir(parents=True, exist_ok=True)
        self.pki = make_pki(self.home / "pki", self.service_ip)
        self._write_kubeconfigs()
        shutil.rmtree(self.home / "etcd", ignore_errors=True)
        if self.etcd_seed is not None:
            shutil.copytree(self.etcd_seed, self.home / "etcd")
        try:
            self._start("etcd", self._etcd_argv())
            self._wait(lambda: self._etcd_healthy(), "etcd")
            self._start("kube-apiserver", self._apiserver_argv())
            self.wait_apiserver()
            self._start("kube-controller-manager", self._controller_manager_argv())
            self._bootstrap()
            if data_plane:
                self._start_data_plane()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_data_plane(self) -> None:
        from .pods import PodWatch

        self._start("kube-scheduler", self._scheduler_argv())
        self._start("kwok", self._kwok_argv())
        from lightkube.resources.core_v1 import Node

        have = sum(1 for n in self.client().list(Node) if n.metadata.name.startswith(NODE_PREFIX))  # a seeded etcd
        self.add_nodes(max(0, self.nodes - have))
        self.pods = PodWatch(self.client()).start()
        if self.metrics == "metrics-server":
            self.run_kubectl("apply", "--server-side", "-f", str(MANIFESTS / "metrics-server-rbac.yaml"))
            self._start("metrics-server", self._metrics_server_argv())
            self._register_metrics_server()
        else:
            from .metrics import MetricsFixture

            self.fixture = MetricsFixture(self, self.pods).start()

    def add_nodes(self, count: int, *, cpu: Optional[str] = None, memory: Optional[str] = None,
                  pods: Optional[int] = None, labels: Optional[dict] = None) -> list[str]:
        """Create ``count`` more KWOK nodes (``kwok-node-<i>``; allocatable ``cpu``, ``memory`` and ``pods``,
        default the plane's) and wait until KWOK made each Ready. Returns their names."""
        from lightkube import codecs
        from lightkube.resources.core_v1 import Node

        client = self.client()
        first = sum(1 for n in client.list(Node) if n.metadata.name.startswith(NODE_PREFIX))
        names = [f"{NODE_PREFIX}{i}" for i in range(first, first + count)]
        for name in names:
            resources = {"cpu": cpu or self.node_cpu, "memory": memory or self.node_memory,
                         "pods": str(pods or self.node_pods)}
            client.create(codecs.from_dict({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name,
                             "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                        "kubernetes.io/arch": "amd64", "type": "kwok", **(labels or {})},
                             # KWOK manages it; metrics-server (>= 0.7) scrapes the kubelet path it names
                             "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0",
                                             "metrics.k8s.io/resource-metrics-path":
                                                 f"/metrics/nodes/{name}/metrics/resource"}},
                "status": {"allocatable": resources, "capacity": resources}}))

        def ready() -> bool:
            got = {n.metadata.name: n for n in client.list(Node) if n.metadata.name in names}
            return len(got) == len(names) and all(
                any(c.type == "Ready" and c.status == "True" for c in (n.status.conditions or []))
                for n in got.values() if n.status)

        self._wait(ready, "kwok")
        return names

    def kubelet_scrape_job(self, interval: str = "15s") -> dict:
        """A Prometheus scrape job (one ``scrape_configs`` entry) of every KWOK node's (there now) resource metrics: the
        kubelet endpoint ``/metrics/resource`` as KWOK emulates it (``controlplane/kwok/metrics.yaml``:
        ``container_cpu_usage_seconds_total``, ``pod_cpu_usage_seconds_total``, the working sets, each with
        ``namespace`` and ``pod`` labels), what a real cluster's Prometheus scrapes from each kubelet. One target per
        node (its path is the node's annotation ``metrics.k8s.io/resource-metrics-path``, as metrics-server reads
        it), labelled ``node``; over HTTPS without verifying KWOK's certificate, as metrics-server's
        ``--kubelet-insecure-tls``. ``interval``: a Prometheus duration."""
        from lightkube.resources.core_v1 import Node

        groups = [{"targets": [f"127.0.0.1:{self.kwok_port}"],
                   "labels": {"__metrics_path__": path, "node": n.metadata.name}}
                  for n in self.client().list(Node)
                  if (path := (n.metadata.annotations or {}).get("metrics.k8s.io/resource-metrics-path"))]
        return {"job_name": "kubelet-resource", "scrape_interval": interval, "scheme": "https",
                "tls_config": {"insecure_skip_verify": True}, "static_configs": groups}

    def stop(self) -> None:
        """Stop the fixtures and components (in the reverse order of their start) and remove etcd's data."""
        for part in (self.fixture, self.pods):
            if part is not None:
                part.stop()
        self.fixture = self.pods = None
        for name in ("metrics-server", "prometheus-adapter", "kwok", "kube-scheduler", "kube-controller-manager",
                     "kube-apiserver", "etcd"):
            comp = self.components.pop(name, None)
            if comp is not None:
                comp.stop()
        shutil.rmtree(self.home / "etcd", ignore_errors=True)  # etcd preallocates a 64 MB WAL

    def __enter__(self) -> "ControlPlane":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def restart_apiserver(self, down_seconds: float = 0.0) -> None:
        """Stop kube-apiserver (SIGTERM, as a rolling upgrade does), stay down ``down_seconds``, start it with
        the same flags and wait until it is ready again."""
        comp = self.components["kube-apiserver"]
        comp.stop()
        time.sleep(down_seconds)
        comp.start()
        self.wait_apiserver()

    def save_etcd(self, folder: Path) -> None:
        """Copy etcd's data to ``folder`` (replaced) with every component stopped meanwhile, then start them again:
        a later ``ControlPlane(etcd_seed=folder, service_cidr=...)`` starts with the same objects."""
        order = [n for n in ("kube-controller-manager", "kube-apiserver", "etcd") if n in self.components]
        for name in order:
            self.components[name].stop()
        tmp = Path(f"{folder}.partial")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(self.home / "etcd", tmp)
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)
        for name in reversed(order):
            self.components[name].start()
            if name == "etcd":
                self._wait(self._etcd_healthy, "etcd")
            elif name == "kube-apiserver":
                self.wait_apiserver()

    def restart_controller_manager(self, controllers: tuple[str, ...], extra_args: tuple[str, ...] = ()) -> int:
        """Start kube-controller-manager again with other ``--controllers`` and flags (e.g. upstream's
        horizontalpodautoscaling); returns its pid once it answers /healthz."""
        comp = self.components.pop("kube-controller-manager", None)
        if comp is not None:
            comp.stop()
        self.controllers, self.controller_manager_args = tuple(controllers), tuple(extra_args)
        self._start("kube-controller-manager", self._controller_manager_argv())
        self._wait(self._controller_manager_healthy, "kube-controller-manager")
        return self.components["kube-controller-manager"].proc.pid

    def controller_manager_metrics(self) -> str:
        """kube-controller-manager's /metrics text (read with the admin certificate)."""
        with self._admin_http(verify=False) as http:
            return http.get(f"https://127.0.0.1:{self.controller_manager_port}/metrics").text

    def _controller_manager_healthy(self) -> bool:
        with self._admin_http(verify=False) as http:
            return http.get(f"https://127.0.0.1:{self.controller_manager_port}/healthz").status_code == 200

    def wait_apiserver(self) -> None:
        self._wait(self._apiserver_ready, "kube-apiserver")

    def compact_etcd(self) -> int:
        """Compact etcd's history up to its current revision (what kube-apiserver does every 5 minutes), so a
        watch from an older resourceVersion gets 410 Gone. Returns the revision compacted to."""
        base = f"http://127.0.0.1:{self.etcd_port}/v3/kv"
        with httpx2.Client(timeout=30, trust_env=False) as http:
            rev = int(http.post(f"{base}/range", json={"key": "AA=="}).json()["header"]["revision"])
            http.post(f"{base}/compaction", json={"revision": str(rev), "physical": True}).raise_for_status()
        return rev

    # ----- clients ---------------------------------------------------------------------------------------
    def client(self):
        """A lightkube sync ``Client`` as the admin (``system:masters``)."""
        from lightkube import Client, KubeConfig

        return Client(KubeConfig.from_file(self.admin_kubeconfig), trust_env=False, timeout=30)

    def run_kubectl(self, *args: str, input: Optional[str] = None, check: bool = True,
                    kubeconfig: Optional[Path] = None) -> subprocess.CompletedProcess:
        """``kubectl ARGS`` (the v1.37.2 one built here) as the admin; output captured as text."""
        res = subprocess.run([str(self.kubectl), "--kubeconfig", str(kubeconfig or self.admin_kubeconfig), *args],
                             input=input, capture_output=True, text=True, timeout=120)
        if check and res.returncode != 0:
            raise ControlPlaneError(f"kubectl {' '.join(args)}: {res.stderr.strip()}")
        return res

    def kubeconfig(self, path: Path, *, token_file: Optional[Path] = None, cert: Optional[str] = None) -> Path:
        """Write a kubeconfig for this API server at ``path``: a bearer ``tokenFile`` (re-read by the client
        when the server answers 401) or the client certificate ``cert`` of the PKI (``admin``, ...)."""
        assert self.pki is not None
        user: dict = {}
        if token_file is not None:
            user["tokenFile"] = str(token_file)
        if cert is not None:
            user["client-certificate"] = str(self.pki.folder / f"{cert}.crt")
            user["client-key"] = str(self.pki.folder / f"{cert}.key")
        doc = {"apiVersion": "v1", "kind": "Config", "current-context": "pyhpa",
               "clusters": [{"name": "pyhpa", "cluster": {"server": self.url,
                                                          "certificate-authority": str(self.pki.ca_crt)}}],
               "users": [{"name": "user", "user": user}],
               "contexts": [{"name": "pyhpa", "context": {"cluster": "pyhpa", "user": "user"}}]}
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path

    def version_line(self) -> str:
        """What ``kube-apiserver --version`` prints (``Kubernetes v1.37.2``)."""
        return subprocess.run([str(self.bin / "kube-apiserver"), "--version"], capture_output=True, text=True,
                              timeout=60).stdout.strip()

    # ----- internals ----------------------------------------------------------------------------------------
    def _write_kubeconfigs(self) -> None:
        self.kubeconfig(self.admin_kubeconfig, cert="admin")
        self.kubeconfig(self.home / "controller-manager.kubeconfig", cert="controller-manager")
        self.kubeconfig(self.home / "scheduler.kubeconfig", cert="scheduler")
        self.kubeconfig(self.home / "metrics-server.kubeconfig", cert="metrics-server-client")
        self.kubeconfig(self.home / "adapter.kubeconfig", cert="adapter-client")

    def _start(self, name: str, argv: list[str]) -> None:
        comp = Component(name, argv, self.log(name))
        self.components[name] = comp
        comp.start()

    def _wait(self, ready, name: str) -> None:
        deadline = time.monotonic() + self.start_timeout
        comp = self.components.get(name)
        while time.monotonic() < deadline:
            if comp is not None and not comp.running():
                raise ControlPlaneError(f"{name} exited: {comp.tail()} (log: {comp.log})")
            try:
                if ready():
                    return
            except (httpx2.HTTPError, OSError, ValueError, KeyError):
                pass
            time.sleep(0.2)
        raise ControlPlaneError(f"{name} did not become ready within {self.start_timeout:.0f} s: "
                                f"{comp.tail() if comp else ''} (log: {self.log(name)})")

    def _etcd_healthy(self) -> bool:
        with httpx2.Client(timeout=2, trust_env=False) as http:
            return http.get(f"http://127.0.0.1:{self.etcd_port}/health").json().get("health") == "true"

    def _admin_http(self, verify: bool = True) -> httpx2.Client:
        """An HTTP client with the admin certificate; ``verify=False`` for kube-controller-manager's self-signed
        serving certificate."""
        assert self.pki is not None
        tls = ssl.create_default_context(cafile=str(self.pki.ca_crt))
        if not verify:
            tls.check_hostname = False
            tls.verify_mode = ssl.CERT_NONE
        tls.load_cert_chain(str(self.pki.admin_crt), str(self.pki.admin_key))
        return httpx2.Client(verify=tls, timeout=5, trust_env=False)

    def _apiserver_ready(self) -> bool:
        with self._admin_http() as http:
            return http.get(f"{self.url}/readyz").status_code == 200

    def _etcd_argv(self) -> list[str]:
        peer = f"http://127.0.0.1:{self.etcd_peer_port}"
        client = f"http://127.0.0.1:{self.etcd_port}"
        return [str(self.bin / "etcd"), "--name=pyhpa", f"--data-dir={self.home / 'etcd'}",
                f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=pyhpa={peer}", "--unsafe-no-fsync", "--log-level=warn",
                "--quota-backend-bytes=8589934592"]

    def _apiserver_argv(self) -> list[str]:
        p = self.pki
        assert p is not None
        return [str(self.bin / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
                "--bind-address=127.0.0.1", f"--secure-port={self.port}", "--advertise-address=127.0.0.1",
                "--endpoint-reconciler-type=none",  # no Endpoints for the kubernetes Service (loopback is refused)
                f"--tls-cert-file={p.apiserver_crt}", f"--tls-private-key-file={p.apiserver_key}",
                f"--client-ca-file={p.ca_crt}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={p.sa_pub}", f"--service-account-signing-key-file={p.sa_key}",
                f"--service-cluster-ip-range={self.service_cidr}",
                "--authorization-mode=Node,RBAC",
                f"--requestheader-client-ca-file={p.front_proxy_ca_crt}",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--proxy-client-cert-file={p.front_proxy_client_crt}",
                f"--proxy-client-key-file={p.front_proxy_client_key}",
                "--profiling=false", "--v=1", *self._audit_args(), *self.apiserver_args]

    def _audit_args(self) -> list[str]:
        if not self.audit:
            return []
        policy = self.home / "audit-policy.yaml"
        policy.write_text(yaml.safe_dump({"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
                                          "omitStages": ["RequestReceived"], "rules": [{"level": "Metadata"}]}))
        return [f"--audit-policy-file={policy}", f"--audit-log-path={self.home / 'logs' / 'audit.log'}",
                "--audit-log-maxbackup=0", "--audit-log-maxsize=0"]

    def _controller_manager_argv(self) -> list[str]:
        p = self.pki
        assert p is not None
        kc = self.home / "controller-manager.kubeconfig"
        self.controller_manager_port = free_port()  # its /metrics and /healthz (the admin certificate may read them)
        return [str(self.bin / "kube-controller-manager"), f"--kubeconfig={kc}",
                f"--authentication-kubeconfig={kc}", f"--authorization-kubeconfig={kc}",
                "--bind-address=127.0.0.1", f"--secure-port={self.controller_manager_port}",
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={p.sa_key}", f"--root-ca-file={p.ca_crt}",
                f"--controllers={','.join(self.controllers)}", "--leader-elect=false",
                f"--service-cluster-ip-range={self.service_cidr}",
                "--concurrent-deployment-syncs=10", "--concurrent-replicaset-syncs=10",
                "--profiling=false", "--v=1", *self.controller_manager_args]

    def _bootstrap(self) -> None:
        """Wait for the default ServiceAccount (the serviceaccount controller makes it; pods of the namespace cannot
        be created before it exists)."""
        from lightkube.resources.core_v1 import ServiceAccount

        client = self.client()
        self._wait(lambda: client.get(ServiceAccount, "default", namespace="default") is not None,
                   "kube-controller-manager")

    def _scheduler_argv(self) -> list[str]:
        kc = self.home / "scheduler.kubeconfig"
        self.scheduler_port = free_port()
        return [str(self.bin / "kube-scheduler"), f"--kubeconfig={kc}", f"--authentication-kubeconfig={kc}",
                f"--authorization-kubeconfig={kc}", "--bind-address=127.0.0.1",
                f"--secure-port={self.scheduler_port}", "--leader-elect=false", "--profiling=false", "--v=1"]

    def _kwok_argv(self) -> list[str]:
        """KWOK as kwokctl's binary runtime runs it (pkg/kwokctl/components/kwok_controller.go), its stages and
        metrics from ``controlplane/kwok`` (``-c``), every node at 127.0.0.1 and one port (the kubelet endpoint
        metrics-server scrapes, a path per node)."""
        p = self.pki
        assert p is not None
        return [str(self.bin / "kwok"), f"--kubeconfig={self.admin_kubeconfig}", "--manage-all-nodes=true",
                "--node-ip=127.0.0.1", f"--node-port={self.kwok_port}",
                "--node-lease-duration-seconds=40",  # kwokctl's default: node heartbeats are Lease renewals
                f"--server-address=127.0.0.1:{self.kwok_port}",
                f"--tls-cert-file={p.kwok_serving_crt}", f"--tls-private-key-file={p.kwok_serving_key}",
                "-c", str(KWOK_CONFIG / "stages.yaml"), "-c", str(KWOK_CONFIG / "metrics.yaml")]

    def _metrics_server_argv(self) -> list[str]:
        """metrics-server with its manifests' flags (manifests/base/deployment.yaml: ``--kubelet-preferred-address-
        types``, ``--kubelet-use-node-status-port``, ``--metric-resolution``) and, as kwokctl runs it outside a
        cluster, ``--kubelet-insecure-tls`` (KWOK's serving certificate names 127.0.0.1, not the node); it listens
        on its Service's cluster IP (a loopback address: see the module docstring)."""
        p = self.pki
        assert p is not None
        kc = self.home / "metrics-server.kubeconfig"
        self.metrics_server_port = free_port(self.metrics_ip)
        return [str(self.bin / "metrics-server"), f"--kubeconfig={kc}", f"--authentication-kubeconfig={kc}",
                f"--authorization-kubeconfig={kc}", f"--bind-address={self.metrics_ip}",
                f"--secure-port={self.metrics_server_port}",
                f"--tls-cert-file={p.metrics_server_crt}", f"--tls-private-key-file={p.metrics_server_key}",
                "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname", "--kubelet-use-node-status-port",
                "--kubelet-insecure-tls", f"--metric-resolution={self.metric_resolution}s",
                # it refuses a resolution not above its kubelet request timeout (10 s by default)
                *([f"--kubelet-request-timeout={self.metric_resolution // 2}s"] if self.metric_resolution <= 10 else []),
                "--v=1"]

    def _register_metrics_server(self) -> None:
        """metrics-server's Service (its cluster IP the address it listens on) and APIService
        ``v1beta1.metrics.k8s.io`` (manifests/base/apiservice.yaml, with the cluster CA as ``caBundle`` instead of
        ``insecureSkipTLSVerify``); waits until the APIService is Available."""
        ns, name = METRICS_SERVER_SERVICE
        register_service(self, ns, name, self.metrics_ip, self.metrics_server_port,
                         [("metrics.k8s.io", "v1beta1", 100)])

    def start_adapter(self, prometheus_url: str, config: Path = MANIFESTS / "prometheus-adapter-config.yaml",
                      relist_seconds: int = 10) -> None:
        """Start prometheus-adapter v0.12.0 on ``prometheus_url`` with the rules ``config`` (default: the repository's,
        ``controlplane/manifests/prometheus-adapter-config.yaml``) and its manifests' RBAC, and register it as
        ``custom.metrics.k8s.io`` ``v1beta2`` and ``v1beta1`` and ``external.metrics.k8s.io`` ``v1beta1`` (the
        fixture must not serve them: ``metrics="metrics-server"``); waits until they are Available.
        ``relist_seconds``: ``--metrics-relist-interval`` (its manifests say 1m; a test's new series show sooner).
        Raises ``ControlPlaneError``."""
        from .pki import ADAPTER_SERVICE

        if self.fixture is not None:
            raise ControlPlaneError("the metrics fixture serves the custom and external metrics APIs of this plane")
        if not (self.bin / "prometheus-adapter").is_file():
            raise ControlPlaneError(f"{self.bin / 'prometheus-adapter'} is missing: build it first "
                                    "(python -m controlplane build)")
        self.run_kubectl("apply", "--server-side", "-f", str(MANIFESTS / "prometheus-adapter-rbac.yaml"))
        p = self.pki
        assert p is not None
        kc = self.home / "adapter.kubeconfig"
        self.adapter_port = free_port(self.adapter_ip)
        self._start("prometheus-adapter", [
            str(self.bin / "prometheus-adapter"), f"--prometheus-url={prometheus_url}", f"--config={config}",
            f"--metrics-relist-interval={relist_seconds}s", f"--lister-kubeconfig={kc}",
            f"--authentication-kubeconfig={kc}", f"--authorization-kubeconfig={kc}",
            f"--bind-address={self.adapter_ip}", f"--secure-port={self.adapter_port}",
            f"--tls-cert-file={p.adapter_crt}", f"--tls-private-key-file={p.adapter_key}", "--v=1"])
        ns, name = ADAPTER_SERVICE
        register_service(self, ns, name, self.adapter_ip, self.adapter_port, list(ADAPTER_APIS))

    def stop_adapter(self) -> None:
        """Stop prometheus-adapter and remove its APIServices (nothing then claims the custom and external metrics
        APIs)."""
        from lightkube.resources.apiregistration_v1 import APIService

        comp = self.components.pop("prometheus-adapter", None)
        if comp is not None:
            comp.stop()
        client = self.client()
        for group, version, _ in ADAPTER_APIS:
            client.delete(APIService, f"{version}.{group}")
