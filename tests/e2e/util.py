"""Helpers of the end-to-end tier: objects, waits, reads, and ``pyhpa run`` as a subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Optional

import pytest
from lightkube import ApiError, codecs
from lightkube.generic_resource import create_namespaced_resource

from controlplane import ControlPlane

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "deploy" / "crd.yaml"
HA = create_namespaced_resource("pyhpa.dev", "v1alpha1", "HorizontalAutoscaler", "horizontalautoscalers")


def service_account_token(client, ns: str, account: str, secret: str) -> str:
    """A token of the ServiceAccount ``ns/account`` bound to the Secret ``secret`` (made here): valid until the Secret
    is deleted (a kubeconfig's ``tokenFile``: ``plane.kubeconfig(path, token_file=...)``)."""
    from lightkube.models.authentication_v1 import BoundObjectReference, TokenRequestSpec
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.core_v1 import ServiceAccountToken

    made = client.create(codecs.from_dict({"apiVersion": "v1", "kind": "Secret",
                                           "metadata": {"name": secret, "namespace": ns}}))
    request = ServiceAccountToken(metadata=ObjectMeta(name=account, namespace=ns), spec=TokenRequestSpec(
        audiences=[], expirationSeconds=600,
        boundObjectRef=BoundObjectReference(kind="Secret", apiVersion="v1", name=secret, uid=made.metadata.uid)))
    return client.create(request, account, namespace=ns).status.token


def has_default_sa(client, ns: str) -> bool:
    from lightkube.resources.core_v1 import ServiceAccount

    try:
        client.get(ServiceAccount, "default", namespace=ns)
        return True
    except ApiError:
        return False


#: seconds a wait right after an API server restart may take: every client's backoff (the controller's informers,
#: kube-controller-manager's and metrics-server's reflectors) doubles up to 30 s while the server starts
AFTER_RESTART = 120


def wait_until(predicate: Callable[[], Any], timeout: float = 60.0, what: str = "condition", every: float = 0.25) -> Any:
    """Poll ``predicate`` until it returns something truthy (returned); fail naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except ApiError as e:
            last = e
        else:
            if last:
                return last
        time.sleep(every)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})", pytrace=False)


# ----------------------------------------------------------------------------------------------- objects
def deployment(name: str, ns: str, replicas: int = 1, cpu: str = "100m", limit: Optional[str] = None,
               annotations: Optional[dict] = None, labels: Optional[dict] = None) -> dict:
    """An apps/v1 Deployment of one container ``app`` requesting ``cpu`` (pods labelled ``app: name``)."""
    resources: dict = {"requests": {"cpu": cpu}}
    if limit:
        resources["limits"] = {"cpu": limit}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name, **(labels or {})},
                                               "annotations": dict(annotations or {})},
                                  "spec": {"containers": [{"name": "app", "image": "registry.invalid/app:1",
                                                           "resources": resources}]}}}}


def autoscaler(name: str, ns: str, target: str, metrics: list[dict], min_replicas: int = 1, max_replicas: int = 10,
               **spec: Any) -> dict:
    """A HorizontalAutoscaler of Deployment ``target``."""
    return {"apiVersion": "pyhpa.dev/v1alpha1", "kind": "HorizontalAutoscaler",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
                     "minReplicas": min_replicas, "maxReplicas": max_replicas, "metrics": metrics, **spec}}


def cpu_utilization(percent: int) -> dict:
    return {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                       "averageUtilization": percent}}}


def external_average(name: str, average: str) -> dict:
    return {"type": "External", "external": {"metric": {"name": name},
                                             "target": {"type": "AverageValue", "averageValue": average}}}


def apply(client, obj: dict):
    """Create ``obj`` (a dict) through the API server; returns the created object."""
    if obj["kind"] == "HorizontalAutoscaler":
        return client.create(HA(obj))
    return client.create(codecs.from_dict(obj))


def spec_replicas(client, ns: str, name: str) -> int:
    from lightkube.resources.apps_v1 import Deployment

    return client.get(Deployment, name, namespace=ns).spec.replicas


def ha_status(client, ns: str, name: str) -> dict:
    return client.get(HA, name, namespace=ns).status or {}


def scaled_to(client, ns: str, name: str, replicas: int, run: Optional["Pyhpa"] = None) -> Any:
    """True once the Deployment ``ns/name`` has ``spec.replicas == replicas``; else a ``Pending`` saying what there
    is to see (``wait_until`` prints it when it times out): the replicas, the HorizontalAutoscaler's conditions and
    currentReplicas, and ``run``'s last log lines about that autoscaler or its informers."""
    now = spec_replicas(client, ns, name)
    if now == replicas:
        return True
    why = [f"spec.replicas {now}"]
    try:
        status = ha_status(client, ns, name)
    except ApiError as err:
        why.append(f"autoscaler: {err.status.message}")
    else:
        why.append(f"status.currentReplicas {status.get('currentReplicas')}, lastScaleTime "
                   f"{status.get('lastScaleTime')}")
        why += [f"{c['type']}={c['status']} {c.get('reason')}: {c.get('message')}"
                for c in status.get("conditions") or []] or ["no conditions: never synced"]
    if run is not None:
        lines = [r for r in run.records() if r.get("autoscaler") == f"{ns}/{name}"
                 or r.get("logger") == "pyhpa.controller.informer"]
        why += [f"log {r.get('time')} {r.get('msg')} {r.get('error') or ''}"[:300] for r in lines[-6:]]
    return Pending(why)


def condition(status: dict, kind: str) -> Optional[dict]:
    return next((c for c in status.get("conditions") or [] if c["type"] == kind), None)


EVENT = create_namespaced_resource("events.k8s.io", "v1", "Event", "events")


def events_of(client, ns: str, name: str) -> list[SimpleNamespace]:
    """events.k8s.io/v1 Events about the HorizontalAutoscaler ``ns/name`` (oldest first), as namespaces with
    ``reason``, ``note``, ``type``, ``reportingController``, ``regarding`` (dict), ``series`` and ``name``. (Read
    as untyped objects: Events other components write through core/v1 have ``eventTime: null``, which lightkube's
    events.k8s.io model refuses.)"""
    out = []
    for e in client.list(EVENT, namespace=ns):
        d = e.to_dict()
        regarding = d.get("regarding") or {}
        if regarding.get("name") == name and regarding.get("kind") == "HorizontalAutoscaler":
            out.append(SimpleNamespace(reason=d.get("reason"), note=d.get("note"), type=d.get("type"),
                                       reportingController=d.get("reportingController"), regarding=regarding,
                                       series=d.get("series"), name=d["metadata"]["name"],
                                       at=d.get("eventTime") or d["metadata"].get("creationTimestamp")))
    return sorted(out, key=lambda e: e.at)


def set_pod_cpu(plane, ns: str, app: str, millicores: int, container: str = "app", wait: bool = True) -> int:
    """Every current pod of ``app`` in ``ns`` uses ``millicores`` (metrics.k8s.io); returns how many pods.

    On the metrics fixture's plane the value is set at once. On the real pipeline each running pod of ``app`` (and
    each one it gets later, until the test ends: ``stop_loads``) is annotated ``kwok.x-k8s.io/usage-cpu``, and this
    waits (unless ``wait`` is false) until metrics-server serves it (within 2 %: KWOK's rate between two scrapes)
    for every pod of ``app`` running at that moment (an autoscaler may delete pods meanwhile)."""
    pods = [p for p in plane.pods.pods(ns) if (p["metadata"].get("labels") or {}).get("app") == app
            and not p["metadata"].get("deletionTimestamp")]
    if plane.fixture is not None:
        for p in pods:
            plane.fixture.set_pod_metrics(ns, p["metadata"]["name"], {container: {"cpu": f"{millicores}m"}})
        return len(pods)
    key = (id(plane), ns, app)
    if key in _LOADS:
        _LOADS[key].set(millicores)
    else:
        _LOADS[key] = SpreadLoad(plane, ns, app, millicores, each=True).start()
    if not wait:
        return len(pods)
    client = plane.client()

    def served() -> bool:
        # the pods running now (read at each poll: an autoscaler may delete some before they show the new value,
        # as it may scale down on the first scrape between two values)
        names = [p["metadata"]["name"] for p in running_pods(plane, ns, app)]
        return bool(names) and all((cpu := pod_cpu(client, ns, n)) is not None
                                   and abs(cpu - millicores) <= max(2, 0.02 * millicores) for n in names)
    wait_until(served, timeout=150, what=f"metrics-server to serve {millicores}m for {app}'s running pods")
    return len(pods)


_LOADS: dict = {}


def stop_loads() -> None:
    """Stop the annotators ``set_pod_cpu`` started (after each test)."""
    while _LOADS:
        _LOADS.popitem()[1].stop()


PodMetrics = create_namespaced_resource("metrics.k8s.io", "v1beta1", "PodMetrics", "pods")


def pod_cpu(client, ns: str, name: str) -> Optional[float]:
    """The pod's CPU usage as metrics.k8s.io serves it (millicores), or None while metrics-server has none."""
    from pyhpa.adapters.parse import quantity

    try:
        item = client.get(PodMetrics, name, namespace=ns)
    except ApiError as e:
        if e.status.code == 404:
            return None
        raise
    return sum(float(quantity(c["usage"]["cpu"])) * 1000 for c in item.containers)


def running_pods(plane, ns: str, app: Optional[str]) -> list[dict]:
    """Running pods of ``ns`` not being deleted; with ``app``, only those labelled ``app: <app>``."""
    return [p for p in plane.pods.pods(ns) if (app is None or (p["metadata"].get("labels") or {}).get("app") == app)
            and (p.get("status") or {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]


# ----------------------------------------------------------------------------------------------- pyhpa run
class Pyhpa:
    """``pyhpa run ARGS`` as a subprocess against ``plane``; its log lines in ``log`` (a file), parsed ``records``.

    ``kubeconfig`` defaults to the admin's. ``--health-port -1``, ``--log-format json`` and (without
    ``--leader-elect`` or ``--shards``) ``--no-leader-elect`` unless given."""

    def __init__(self, plane: ControlPlane, tmp: Path, *args: str, kubeconfig: Optional[Path] = None,
                 name: str = "pyhpa"):
        self.plane = plane
        self.log = tmp / f"{name}-{uuid.uuid4().hex[:6]}.log"
        argv = list(args)
        if "--health-port" not in argv:
            argv += ["--health-port", "-1"]
        if "--log-format" not in argv:
            argv += ["--log-format", "json"]
        if not {"--leader-elect", "--shards", "--preview"} & set(argv):
            argv.append("--no-leader-elect")  # one process, as in upstream's integration tests
        self.argv = [sys.executable, "-m", "pyhpa.cli.main", "run", "--kubeconfig",
                     str(kubeconfig or plane.admin_kubeconfig), *argv]
        self.proc: Optional[subprocess.Popen] = None

    def start(self, wait_synced: bool = True) -> "Pyhpa":
        out = open(self.log, "ab")
        env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
        env.pop("KUBECONFIG", None)
        self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env, cwd=ROOT)
        out.close()
        if wait_synced:
            wait_until(lambda: self.says("caches synced") or self._exited(), timeout=90,
                       what=f"pyhpa run to sync its caches (log {self.log})")
            assert self.proc.poll() is None, f"pyhpa run exited: {self.text()[-2000:]}"
        return self

    def _exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def records(self) -> list[dict]:
        out = []
        for line in self.text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append({"msg": line})
        return out

    def says(self, fragment: str) -> bool:
        return fragment in self.text()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> Optional[int]:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def __enter__(self) -> "Pyhpa":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class Pending:
    """A falsy answer that says what is still moving or has not settled (``wait_until`` shows it when it times out:
    the first 12 reasons)."""

    def __init__(self, why: list[str]):
        self.why = why

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "; ".join(self.why[:12])


def new_namespace(client, name: str) -> str:
    """Create the namespace ``name`` and wait for its default ServiceAccount (pods need it); returns ``name``."""
    from lightkube.resources.core_v1 import Namespace

    client.create(Namespace(metadata={"name": name}))
    wait_until(lambda: has_default_sa(client, name), what=f"the default ServiceAccount of {name}")
    return name


# ----------------------------------------------------------------------------------------------- KWOK's load
USAGE_CPU = "kwok.x-k8s.io/usage-cpu"
"""The pod annotation KWOK's ClusterResourceUsage (controlplane/kwok/metrics.yaml) reads a pod's CPU usage from."""


class SpreadLoad:
    """A Deployment's demand (``millicores`` in all) spread evenly over its running pods, as a Service spreads
    requests: every ``every`` s (and at ``set``) each running pod of ``app`` in ``ns`` gets the annotation
    ``kwok.x-k8s.io/usage-cpu`` = ceil(millicores / pods); KWOK reports it to metrics-server at the next scrape.
    With ``each``, every pod uses ``millicores`` itself, however many there are. Use as a context manager (a daemon
    thread), or ``start``/``stop``."""

    def __init__(self, plane, ns: str, app: str, millicores: int, every: float = 1.0, each: bool = False):
        self.plane, self.ns, self.app, self.every, self.each = plane, ns, app, every, each
        self.millicores = millicores
        self.client = plane.client()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"load-{app}", daemon=True)

    def start(self) -> "SpreadLoad":
        return self.__enter__()

    def stop(self) -> None:
        self.__exit__()

    def set(self, millicores: int) -> None:
        self.millicores = millicores
        self.apply()

    def apply(self) -> int:
        """Annotate the pods now; returns how many pods share the load."""
        from lightkube.resources.core_v1 import Pod
        from lightkube.types import PatchType

        with self._lock:
            pods = running_pods(self.plane, self.ns, self.app)
            if not pods:
                return 0
            share = f"{self.millicores if self.each else -(-self.millicores // len(pods))}m"
            for p in pods:
                if (p["metadata"].get("annotations") or {}).get(USAGE_CPU) != share:
                    try:
                        self.client.patch(Pod, p["metadata"]["name"], {"metadata": {"annotations": {USAGE_CPU: share}}},
                                          namespace=self.ns, patch_type=PatchType.MERGE)
                    except ApiError:  # gone meanwhile: the next round sees the pods as they are
                        pass
            return len(pods)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.apply()
            except Exception:  # noqa: BLE001 - an API server hiccup: the next round tries again
                pass

    def __enter__(self) -> "SpreadLoad":
        self.apply()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)
