"""A real Prometheus server (Debian's ``prometheus`` package) on loopback, for tests.

``.ci/run`` installs the package. ``PrometheusServer`` writes a scrape config pointing at the
given targets, starts ``prometheus`` on a free loopback port with a temporary data dir,
waits until it is ready and stops it at exit. Tests skip, saying why, only when the
binary is absent.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import httpx2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prometheus_binary() -> str | None:
    return shutil.which("prometheus")


class PrometheusServer:
    """Start with ``with PrometheusServer(["127.0.0.1:9100"]) as prom: prom.url``.

    ``backfill``: an OpenMetrics text file written into the TSDB before the start with
    ``promtool tsdb create-blocks-from openmetrics`` (past samples, e.g. days of history).
    """

    def __init__(self, targets: list[str], scrape_interval: str = "1s", backfill: Path | None = None):
        self.targets = targets
        self.backfill = backfill
        self.scrape_interval = scrape_interval
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._dir = tempfile.TemporaryDirectory(prefix="pyhpa-prom-")
        self._proc: subprocess.Popen | None = None

    def __enter__(self) -> PrometheusServer:
        d = Path(self._dir.name)
        targets = ", ".join(f"'{t}'" for t in self.targets)
        (d / "prometheus.yml").write_text(
            f"global:\n  scrape_interval: {self.scrape_interval}\n  evaluation_interval: {self.scrape_interval}\n"
            f"scrape_configs:\n  - job_name: test\n    static_configs:\n      - targets: [{targets}]\n"
        )
        if self.backfill is not None:
            subprocess.run([shutil.which("promtool") or "promtool", "tsdb", "create-blocks-from", "openmetrics",
                            str(self.backfill), str(d / "data")], check=True, capture_output=True, timeout=300)
        self._proc = subprocess.Popen(
            [prometheus_binary(), f"--config.file={d / 'prometheus.yml'}", f"--storage.tsdb.path={d / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        self._wait_ready()
        return self

    def _wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"prometheus exited with code {self._proc.returncode}")
            try:
                if httpx2.get(f"{self.url}/-/ready", timeout=1.0).status_code == 200:
                    return
            except httpx2.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("prometheus did not become ready")

    def wait_for(self, query: str, predicate, timeout: float = 60.0) -> dict:
        """Poll an instant query until ``predicate(answer_json)`` holds; returns the answer."""
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
        self._dir.cleanup()
