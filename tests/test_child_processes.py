"""No process outlives the command that started it (issue 29): ``pyhpa tune``'s worker processes die with it,
whether it ends by SIGTERM or by SIGKILL (no chance to clean up): the kernel kills them (PR_SET_PDEATHSIG)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (from /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat[1] == pid and stat[0] != "Z":
                out.append(int(entry.name))
    return out


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of ``pid``, or None when there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text.rsplit(")", 1)[1].split()  # after "pid (comm)": state, ppid, ...
    return fields[0], int(fields[1])


def _alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")  # a zombie has ended (whoever reaps it)


@pytest.mark.skipif(not Path("/proc/self/stat").exists() or (os.cpu_count() or 1) < 2,
                    reason="needs Linux /proc and 2 cores for 2 worker processes")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_tune_workers_die_with_tune(tmp_path, sig):
    cmd = [sys.executable, "-m", "pyhpa.cli.main", "tune", "--hpa", "examples/tune/web-hpa.yaml",
           "--target", "benchmarks/proactive/deployment.yaml", "--profile", "benchmarks/proactive/profile.yaml",
           "--trace", "benchmarks/data/nasa_http_1995-07_per_minute.csv.gz", "--column", "requests_per_second",
           "--load-scale", "100", "--start", "1995-07-08", "--end", "1995-07-09T06:00:00", "--held-out", "21600",
           "--trials", "500", "--timeout", "600", "--jobs", "2", "--no-progress", "--output-dir", str(tmp_path / "out")]
    tune = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 240
        while len(workers) < 2 and time.monotonic() < deadline and tune.poll() is None:
            time.sleep(0.2)
            workers = _children(tune.pid)
        assert len(workers) >= 2, ("no worker processes started", tune.poll(), tune.stderr.read() if tune.poll() else "")
        tune.send_signal(sig)
        tune.wait(30)
        deadline = time.monotonic() + 30
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [w for w in workers if _alive(w)]
        assert not left, f"worker processes {left} outlived pyhpa tune ({sig.name})"
    finally:
        if tune.poll() is None:
            tune.kill()
            tune.wait()
        for w in workers:  # what this test started, should the assertion have failed
            if _alive(w):
                os.kill(w, signal.SIGKILL)
