"""Every pod of the cluster as the API server serves it, kept current by a list and a watch.

``PodWatch(client).start()`` lists every pod, then watches from the list's resourceVersion (any error, 410 Gone or
a restarted API server lists again, counted in ``relists``) in a daemon thread. ``pods(namespace)`` returns the
pods known now (dicts, as the API serves them); ``listeners`` are called with ``(event, pod dict)`` for every pod
seen, in the watch thread (``ADDED``, ``MODIFIED``, ``DELETED``; the list's pods as ``ADDED``). The metrics fixture
answers label selectors from it, and tests read the pods' phases without an API call.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Optional

from lightkube import Client
from lightkube.resources.core_v1 import Pod

log = logging.getLogger("controlplane.pods")


class PodWatch:
    """The cluster's pods, listed then watched in a daemon thread (see the module docstring)."""

    def __init__(self, client: Client):
        self.client = client
        self._pods: dict[tuple[str, str], dict] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.synced = threading.Event()
        self.listeners: list[Callable[[str, dict], None]] = []
        self.relists = 0  # watches ended by an error (a restarted API server, 410 Gone, a timeout), each a new list

    def start(self, timeout: float = 60.0) -> "PodWatch":
        """Start the thread and wait for the first list; raises ``RuntimeError`` if it takes over ``timeout`` s."""
        self._thread = threading.Thread(target=self._run, name="pod-watch", daemon=True)
        self._thread.start()
        if not self.synced.wait(timeout):
            raise RuntimeError(f"could not list pods within {timeout:.0f} s")
        return self

    def stop(self) -> None:
        self._stop.set()

    def pods(self, namespace: Optional[str] = None) -> list[dict]:
        """The pods known now (all namespaces when ``namespace`` is None)."""
        with self._lock:
            return [p for (ns, _), p in self._pods.items() if namespace is None or ns == namespace]

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
                    self._tell("ADDED", d)
                for event, pod in self.client.watch(Pod, namespace="*", resource_version=listing.resourceVersion):
                    if self._stop.is_set():
                        return
                    d = pod.to_dict()
                    key = (d["metadata"]["namespace"], d["metadata"]["name"])
                    with self._lock:
                        if event == "DELETED":
                            self._pods.pop(key, None)
                        else:
                            self._pods[key] = d
                    self._tell(event, d)
            except Exception as exc:  # the API server restarted, a 410 Gone, a timeout: list again
                if self._stop.is_set():
                    return
                self.relists += 1
                log.debug("pod watch relists after %r", exc)
                time.sleep(0.5)

    def _tell(self, event: str, pod: dict) -> None:
        for listener in list(self.listeners):
            listener(event, pod)
