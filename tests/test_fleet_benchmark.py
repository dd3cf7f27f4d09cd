"""``benchmarks/fleet.py --headline``: its variants as tasks on Dask's local cluster give the figures a serial run
gives, to the last digit (only the timings and the peak memory are the run's own), and the command says its wall
time (issue 55)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ("reactive-ca", "reactive-karpenter", "reactive-instant")
#: what a run measures of itself: its wall seconds and its process's peak memory
TIMED = ("seconds", "rss_mb")


def _headline(folder: Path, *flags: str) -> str:
    r = subprocess.run([sys.executable, "benchmarks/fleet.py", "--workloads", "3", "--days", "0.02", "--headline",
                        "--variants", ",".join(VARIANTS), "--results", str(folder), *flags],
                       cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return r.stdout


def test_the_headline_on_dask_gives_the_figures_of_a_serial_run(tmp_path):
    serial = _headline(tmp_path / "serial", "--serial")
    dask = _headline(tmp_path / "dask", "--processes", "2")
    for out in (serial, dask):
        assert [line.split()[0] for line in out.splitlines() if line.startswith("variant=")] == \
            [f"variant={v}" for v in VARIANTS]
        assert out.strip().splitlines()[-1].startswith("headline_seconds=")
    for name in VARIANTS:
        a, b = (json.loads((tmp_path / how / f"{name}.json").read_text()) for how in ("serial", "dask"))
        assert a["workloads"] == 3 and a["overloaded_seconds"] >= 0 and a["node_hours"] > 0
        assert {k: v for k, v in a.items() if k not in TIMED} == {k: v for k, v in b.items() if k not in TIMED}
