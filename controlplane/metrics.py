"""The metrics APIs served through kube-apiserver's aggregation layer with exact values a test sets, in place of
metrics-server and prometheus-adapter.

Kept only where a test needs an exact value at the instant of a read: the side-by-side comparisons with upstream's
HPA controller (tests/e2e/test_side_by_side.py, test_adoption_real.py), whose two controllers must read the same
numbers, and the benchmarks' worlds of 100,000 pods (benchmarks/real_world.py), whose pods no node runs. Everything
else runs on the real pipeline: metrics-server scraping KWOK's nodes, prometheus-adapter on Prometheus
(``ControlPlane(metrics="metrics-server")``, the default).

``MetricsFixture(plane, pods).start()`` serves, over TLS (``metrics.crt``, signed by the cluster CA for
``<service>.<namespace>.svc``), on the cluster IP of a Service in ``kube-system`` (inside the loopback service
CIDR, see ``cluster.py``) and a free port:

* ``metrics.k8s.io`` ``v1beta1`` and ``v1``: PodMetrics (get, list with ``labelSelector``);
* ``custom.metrics.k8s.io`` ``v1beta2``: pods and object metrics;
* ``external.metrics.k8s.io`` ``v1beta1``;

and registers an APIService per group-version whose ``caBundle`` is the cluster CA, so kube-apiserver checks the
fixture's certificate as it checks any aggregated server's. Every request reaches it through kube-apiserver,
which authenticates and authorizes the caller first (RBAC on ``metrics.k8s.io`` ``pods``...).

Values are set with the same calls as kubedouble's (``kubedouble.metrics.MetricsStore``: ``set_pod_metrics``,
``set_pods_metric``, ``set_object_metric``, ``set_external_metric``, ...); pods are those ``pods`` (a
``PodWatch``) knows (their labels answer ``labelSelector``). A pod annotated ``metrics.pyhpa.dev/cpu`` and/or
``metrics.pyhpa.dev/memory`` (quantities) reports that usage on its first container: a demo cluster's load can
be changed with ``kubectl annotate`` (or in a Deployment's pod template). Its samples advance as metrics-server's
do: each read answers with the time of the latest scrape (every ``SCRAPE_SECONDS``, metrics-server's
``--metric-resolution`` in its own manifests) and a ``window`` of one scrape interval, so upstream's CPU
initialization rule (``replica_calculator.go`` ``groupPods``: a sample older than the pod's readiness plus the
window is left out) counts a new pod about one scrape after it turned ready, as on a real cluster, and not 300 s
after it started (a value set with ``set_pod_metrics`` keeps the timestamp it was given).

``unavailable()`` makes every request answer 503 (the metrics pipeline down: the APIService turns
``Available=False``, kube-apiserver answers 503 to clients); ``available()`` ends it.
"""

from __future__ import annotations

import asyncio
import math
import ssl
import threading
import time
from typing import Callable, Optional

from aiohttp import web

from kubedouble.errors import KubeError, json_response, status_body
from kubedouble.metrics import CUSTOM_GROUP, EXTERNAL_GROUP, METRICS_GROUP, MetricsStore, timestamp_str

from .aggregation import register_service
from .net import free_port
from .pki import METRICS_SERVICE

SERVED = {METRICS_GROUP: ["v1", "v1beta1"], CUSTOM_GROUP: ["v1beta2"], EXTERNAL_GROUP: ["v1beta1"]}
"""Group -> versions served, the preferred first."""
ANNOTATION = "metrics.pyhpa.dev/"
SCRAPE_SECONDS = 15
"""metrics-server's ``--metric-resolution`` in its released manifests (components.yaml): a pod's sample is taken
every 15 s, and CPU is the rate between the last two."""


class MetricsFixture(MetricsStore):
    """The aggregated metrics server (see the module docstring); a ``MetricsStore`` with an HTTPS front."""

    def __init__(self, plane, pods):
        super().__init__(self._pods)
        self.plane = plane
        self.watch = pods
        self.host = plane.metrics_ip
        self.port = free_port(self.host)
        self._failing = False
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._runner: Optional[web.AppRunner] = None
        self._thread: Optional[threading.Thread] = None
        self.requests = 0
        self._annotated: set[tuple[str, str]] = set()
        self.before_read: list[Callable[[Optional[str], dict], None]] = []
        """Called with the namespace (None: all) and the read's query parameters (``labelSelector``,
        ``metricLabelSelector``) before a metrics read is answered, in the fixture's thread: a test whose values
        follow the pods sets them there, so no reader sees values older than the pods; a ``KubeError`` it raises
        is the read's answer."""
        pods.listeners.append(self._pod_event)

    # ----- values: a pod annotated with its usage reports it ------------------------------------------------
    def _pods(self, ns: Optional[str]) -> list[dict]:
        return self.watch.pods(ns)

    def _pod_event(self, event: str, pod: dict) -> None:
        """The pod watch saw ``pod``: serve its ``metrics.pyhpa.dev/*`` annotations as its usage."""
        meta = pod["metadata"]
        notes = meta.get("annotations") or {}
        usage = {k: notes[ANNOTATION + k] for k in ("cpu", "memory") if ANNOTATION + k in notes}
        if event == "DELETED" or not usage:
            if (meta["namespace"], meta["name"]) in self._annotated:
                self._annotated.discard((meta["namespace"], meta["name"]))
                self.clear_pod_metrics(meta["namespace"], meta["name"])
        elif pod["spec"].get("containers"):
            self._annotated.add((meta["namespace"], meta["name"]))
            self.set_pod_metrics(meta["namespace"], meta["name"], {pod["spec"]["containers"][0]["name"]: usage})

    def _pod_metrics_item(self, pod: dict, entry: dict) -> dict:
        """An annotated pod's sample is dated at the latest scrape (``SCRAPE_SECONDS``), as metrics-server's are."""
        meta = pod["metadata"]
        if (meta.get("namespace"), meta["name"]) in self._annotated:
            scrape = math.floor(time.time() / SCRAPE_SECONDS) * SCRAPE_SECONDS
            entry = {**entry, "timestamp": timestamp_str(scrape), "window": f"{SCRAPE_SECONDS}s"}
        return super()._pod_metrics_item(pod, entry)

    def unavailable(self) -> None:
        self._failing = True

    def available(self) -> None:
        self._failing = False

    # ----- HTTP ------------------------------------------------------------------------------------------------
    async def _handle(self, request: web.Request) -> web.Response:
        self.requests += 1
        parts = [p for p in request.path.split("/") if p]
        if parts[:1] in (["healthz"], ["livez"], ["readyz"]):
            return web.Response(text="ok")
        if parts[:1] == ["openapi"]:
            return json_response({"swagger": "2.0", "info": {"title": "pyhpa metrics fixture", "version": "v0"},
                                  "paths": {}} if parts[1:] == ["v2"] else {"paths": {}})
        if self._failing:
            return json_response(status_body(503, "the metrics pipeline is down (MetricsFixture.unavailable)"), 503)
        try:
            if parts == ["apis"]:
                return json_response({"kind": "APIGroupList", "apiVersion": "v1",
                                      "groups": [_group(g) for g in SERVED]})
            if len(parts) < 2 or parts[0] != "apis" or parts[1] not in SERVED:
                raise KubeError(404, "the server could not find the requested resource")
            group = parts[1]
            if len(parts) == 2:
                return json_response({"kind": "APIGroup", "apiVersion": "v1", **_group(group)})
            version = parts[2]
            if version not in SERVED[group]:
                raise KubeError(404, "the server could not find the requested resource")
            if len(parts) == 3:
                return json_response({"kind": "APIResourceList", "apiVersion": "v1",
                                      "groupVersion": f"{group}/{version}", "resources": self.discovery(group)})
            query = dict(request.query)
            for hook in self.before_read:
                hook(parts[4] if len(parts) > 4 and parts[3] == "namespaces" else None, query)
            doc = self.handle(group, parts[3:], query)
            if group == METRICS_GROUP and "apiVersion" in doc:
                doc["apiVersion"] = f"{group}/{version}"
            return json_response(doc)
        except KubeError as e:
            return e.response()

    # ----- start and stop ----------------------------------------------------------------------------------------
    def start(self) -> "MetricsFixture":
        """Serve in a daemon thread, then create the Service and APIServices and wait until every APIService is
        ``Available`` (kube-apiserver reached the fixture)."""
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), name="metrics-fixture", daemon=True)
        self._thread.start()
        if not ready.wait(30):
            raise RuntimeError("the metrics fixture did not start")
        self._register()
        return self

    def _serve(self, ready: threading.Event) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        pki = self.plane.pki
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(pki.metrics_crt, pki.metrics_key)
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        self._loop.run_until_complete(web.TCPSite(self._runner, self.host, self.port, ssl_context=tls).start())
        ready.set()
        self._loop.run_forever()

    def stop(self) -> None:
        if self._loop is None:
            return
        loop, self._loop = self._loop, None

        async def down() -> None:
            await self._runner.cleanup()
            loop.stop()

        asyncio.run_coroutine_threadsafe(down(), loop)
        if self._thread is not None:
            self._thread.join(10)

    def _register(self) -> None:
        ns, name = METRICS_SERVICE
        register_service(self.plane, ns, name, self.host, self.port,
                         [(group, version, 100 - i) for group, versions in SERVED.items()
                          for i, version in enumerate(versions)])


def _group(group: str) -> dict:
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in SERVED[group]]
    return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}
