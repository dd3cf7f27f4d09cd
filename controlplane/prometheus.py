"""A real Prometheus server on loopback: Debian's ``prometheus`` package (``apt-get install prometheus``; ``.ci/run``
installs it), for ``python -m controlplane up --prometheus`` and the tests.

``PrometheusServer`` writes a scrape config (static targets, or whole scrape jobs such as
``ControlPlane.kubelet_scrape_job``'s), starts ``prometheus`` on a free loopback port with a data folder of its own,
waits until it is ready (``/-/ready``) and stops it when the ``with`` block ends.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

import httpx2
import yaml

from .net import free_port


class PrometheusError(RuntimeError):
    """Prometheus is not installed, could not be started, or did not become ready."""


def prometheus_binary() -> Optional[str]:
    """The ``prometheus`` executable on ``PATH``, or None."""
    return shutil.which("prometheus")


class PrometheusServer:
    """Start with ``with PrometheusServer(["127.0.0.1:9100"]) as prom: prom.url``.

    ``targets``: ``host:port`` pairs scraped at ``/metrics`` (job ``test``); ``jobs``: more scrape jobs, each a
    ``scrape_configs`` entry of Prometheus' configuration (a dict); ``scrape_interval``: a Prometheus duration
    (``"1s"``, ``"15s"``); ``backfill``: an OpenMetrics text file written into the TSDB before the start with
    ``promtool tsdb create-blocks-from openmetrics`` (past samples, e.g. days of history). ``__enter__`` raises
    ``PrometheusError``.
    """

    def __init__(self, targets: Sequence[str] = (), scrape_interval: str = "1s", backfill: Optional[Path] = None,
                 jobs: Sequence[dict] = ()):
        self.targets = list(targets)
        self.jobs = list(jobs)
        self.backfill = backfill
        self.scrape_interval = scrape_interval
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._dir = tempfile.TemporaryDirectory(prefix="pyhpa-prom-")
        self._proc: Optional[subprocess.Popen] = None

    def config(self) -> dict:
        """The configuration file's content (``prometheus.yml``)."""
        jobs = ([{"job_name": "test", "static_configs": [{"targets": self.targets}]}] if self.targets else [])
        return {"global": {"scrape_interval": self.scrape_interval, "evaluation_interval": self.scrape_interval},
                "scrape_configs": jobs + self.jobs}

    def __enter__(self) -> PrometheusServer:
        binary = prometheus_binary()
        if binary is None:
            raise PrometheusError("prometheus is not on PATH (Debian: apt-get install prometheus)")
        d = Path(self._dir.name)
        (d / "prometheus.yml").write_text(yaml.safe_dump(self.config(), sort_keys=False))
        if self.backfill is not None:
            subprocess.run([shutil.which("promtool") or "promtool", "tsdb", "create-blocks-from", "openmetrics",
                            str(self.backfill), str(d / "data")], check=True, capture_output=True, timeout=300)
        self._proc = subprocess.Popen(
            [binary, f"--config.file={d / 'prometheus.yml'}", f"--storage.tsdb.path={d / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            self._wait_ready()
        except PrometheusError:
            self.__exit__()
            raise
        return self

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise PrometheusError(f"prometheus exited with code {self._proc.returncode}")
            try:
                if httpx2.get(f"{self.url}/-/ready", timeout=1.0).status_code == 200:
                    return
            except httpx2.HTTPError:
                pass
            time.sleep(0.2)
        raise PrometheusError(f"prometheus did not become ready at {self.url} within {timeout:.0f} s")

    def wait_for(self, query: str, predicate: Callable[[dict], bool], timeout: float = 60.0) -> dict:
        """Poll an instant query until ``predicate(answer_json)`` holds; returns the answer. Raises AssertionError
        (a test's wait) when it never does within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        answer: dict = {}
        while time.monotonic() < deadline:
            try:
                answer = httpx2.get(f"{self.url}/api/v1/query", params={"query": query}, timeout=2.0).json()
                if predicate(answer):
                    return answer
            except (httpx2.HTTPError, ValueError):
                pass
            time.sleep(0.3)
        raise AssertionError(f"prometheus never satisfied the wait for {query!r}; last answer {answer}")

    def __exit__(self, *exc) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
        self._dir.cleanup()
