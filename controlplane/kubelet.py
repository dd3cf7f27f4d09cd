"""A kubelet stand-in for a control plane without nodes: what the kubelet writes about pods, and nothing it runs.

``Kubelet(client, node).start()`` watches every pod (list, then watch from the list's resourceVersion; any
error or 410 Gone relists) in a daemon thread, which keeps ``pods()`` current, and, as the kubelet and the scheduler
would (API calls in a pool of four threads, so the cache never waits for them):

* binds a pod with no ``spec.nodeName`` to ``node`` (``pods/binding``, as kube-scheduler does);
* marks a bound Pending pod Running (one it binds, right after the binding): ``startTime``, the ``PodScheduled``,
  ``Initialized``, ``ContainersReady`` and ``Ready`` conditions and a running ``containerStatuses`` entry per
  container, all dated now;
* deletes a pod that is being deleted (``deletionTimestamp`` set) with grace period 0, as the kubelet does once
  its containers stopped.

Annotations on a pod (or its Deployment's pod template) change what it reports, for tests and demos:

* ``kubelet.pyhpa.dev/ready: "false"``: Running but not Ready (a failing readiness probe);
* ``kubelet.pyhpa.dev/start-time: <RFC 3339>``: started then (``startTime``, ``startedAt`` and the conditions'
  ``lastTransitionTime``), e.g. long ago, outside the HPA's CPU initialization period;
* ``kubelet.pyhpa.dev/hold: "true"``: left Pending (never started), as a pod waiting for a node.

``pods()`` returns the pods it knows (dicts, as the API serves them), for the metrics fixture.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import msgspec
from lightkube import ApiError, Client
from lightkube.models.core_v1 import ObjectReference
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Pod, PodBinding, PodStatus
from lightkube.types import PatchType

ANNOTATION = "kubelet.pyhpa.dev/"
log = logging.getLogger("controlplane.kubelet")


def rfc3339(t: Optional[dt.datetime] = None) -> str:
    return (t or dt.datetime.now(dt.timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")


def running_status(pod: dict, now: Optional[str] = None) -> dict:
    """The status the kubelet reports for a started ``pod`` (dict): Running, Ready unless annotated."""
    notes = pod["metadata"].get("annotations") or {}
    at = notes.get(ANNOTATION + "start-time") or now or rfc3339()
    ready = "False" if notes.get(ANNOTATION + "ready", "true").lower() == "false" else "True"
    cond = lambda kind, status="True": {"type": kind, "status": status, "lastTransitionTime": at}  # noqa: E731
    containers = [{"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": ready == "True",
                   "started": True, "restartCount": 0, "state": {"running": {"startedAt": at}}}
                  for c in pod["spec"].get("containers", [])]
    return {"phase": "Running", "startTime": at,
            "conditions": [cond("PodReadyToStartContainers"), cond("Initialized"), cond("ContainersReady", ready),
                           cond("Ready", ready), cond("PodScheduled")],
            "containerStatuses": containers}


class Kubelet:
    """Plays the node ``node`` for every pod of the cluster (see the module docstring)."""

    def __init__(self, client: Client, node: str):
        self.client = client
        self.node = node
        self._pods: dict[tuple[str, str], dict] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.synced = threading.Event()
        self.listeners: list = []  # called with (event, pod dict) for every pod seen
        self._claimed: set = set()  # (action, pod UID) submitted: a later event of the same pod does not repeat it
        self._pool = ThreadPoolExecutor(4, thread_name_prefix="kubelet-fixture-action")
        self.relists = 0  # watches ended by an error (a restarted API server, 410 Gone, a timeout), each a new list

    def start(self) -> "Kubelet":
        self._thread = threading.Thread(target=self._run, name="kubelet-fixture", daemon=True)
        self._thread.start()
        if not self.synced.wait(60):
            raise RuntimeError("the kubelet fixture could not list pods within 60 s")
        return self

    def stop(self) -> None:
        self._stop.set()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def pods(self, namespace: Optional[str] = None) -> list[dict]:
        """The pods known now (all namespaces when ``namespace`` is None)."""
        with self._lock:
            return [p for (ns, _), p in self._pods.items() if namespace is None or ns == namespace]

    # ----- the loop --------------------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                listing = self.client.list(Pod, namespace="*")
                seen = {}
                for pod in listing:
                    d = pod.to_dict()
                    seen[(d["metadata"]["namespace"], d["metadata"]["name"])] = d
                with self._lock:
                    self._pods = seen
                self.synced.set()
                for d in list(seen.values()):
                    self._handle("ADDED", d)
                for event, pod in self.client.watch(Pod, namespace="*", resource_version=listing.resourceVersion):
                    if self._stop.is_set():
                        return
                    self._handle(event, pod.to_dict())
            except Exception as exc:  # the API server restarted, a 410 Gone, a timeout: list again
                if self._stop.is_set():
                    return
                self.relists += 1
                log.debug("kubelet fixture relists after %r", exc)
                time.sleep(0.5)

    def _bind(self, namespace: str, name: str) -> None:
        """POST pods/binding, as kube-scheduler does. kube-apiserver answers a bound pod with a ``Status``
        (``BindingREST.Create``), not the Binding lightkube decodes: a 2xx answer that does not decode is the
        success it reports (an error status raises ``ApiError`` before any decoding)."""
        try:
            self.client.create(PodBinding(metadata=ObjectMeta(name=name, namespace=namespace),
                                          target=ObjectReference(kind="Node", name=self.node, apiVersion="v1")),
                               name, namespace=namespace)
        except msgspec.ValidationError:
            pass

    def _start(self, pod: dict) -> None:
        """Mark ``pod`` Running (``running_status``)."""
        meta = pod["metadata"]
        self.client.patch(PodStatus, meta["name"], {"status": running_status(pod)}, namespace=meta["namespace"],
                          patch_type=PatchType.MERGE)

    def _handle(self, event: str, pod: dict) -> None:
        """Keep the pod in the cache and tell the listeners at once (the watch thread); what the node does about it
        (bind and start, delete) runs in the action pool, so a slow API call never holds the cache back."""
        meta = pod["metadata"]
        key = (meta["namespace"], meta["name"])
        uid = meta.get("uid")
        with self._lock:
            if event == "DELETED":
                self._pods.pop(key, None)
            else:
                self._pods[key] = pod
        for listener in self.listeners:
            listener(event, pod)
        if event == "DELETED":
            self._claimed.difference_update({("start", uid), ("delete", uid)})
            return
        notes = meta.get("annotations") or {}
        if meta.get("deletionTimestamp"):
            if pod["spec"].get("nodeName") == self.node:
                self._act(("delete", uid), key,
                          lambda: self.client.delete(Pod, meta["name"], namespace=meta["namespace"], grace_period=0))
        elif notes.get(ANNOTATION + "hold", "").lower() == "true":
            return
        elif not pod["spec"].get("nodeName"):
            # bound and started in one go (a node that starts its containers at once): the pods a ReplicaSet makes
            # together turn Ready within milliseconds of each other, not one watch event apart
            self._act(("start", uid), key, lambda: (self._bind(meta["namespace"], meta["name"]), self._start(pod)))
        elif pod["spec"]["nodeName"] == self.node and (pod.get("status") or {}).get("phase", "Pending") == "Pending":
            self._act(("start", uid), key, lambda: self._start(pod))

    def _act(self, claim: tuple, key: tuple[str, str], action) -> None:
        """Run ``action`` in the pool once per ``claim`` (an action and a pod UID); a failed one may run again."""
        with self._lock:
            if claim in self._claimed:
                return
            self._claimed.add(claim)

        def run() -> None:
            try:
                action()
            except ApiError as e:
                # gone meanwhile, already bound, or its namespace is being deleted: the next event says more (and
                # may claim the action again: a bind refused with 409 leaves the start to the bound pod's event)
                self._claimed.discard(claim)
                if e.status.code not in (404, 409) and "being terminated" not in (e.status.message or ""):
                    log.warning("kubelet fixture: %s/%s: %s", *key, e.status.message)
            except Exception as exc:  # noqa: BLE001 - the API server restarting: a relist or the next event retries
                log.debug("kubelet fixture: %s/%s: %r", *key, exc)
                self._claimed.discard(claim)

        self._pool.submit(run)
