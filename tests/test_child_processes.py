"""No process outlives the command that started it (issue 29): ``pyhpa tune``'s worker processes die with it,
whether it ends by SIGTERM or by SIGKILL (no chance to clean up): the kernel kills them (PR_SET_PDEATHSIG).
Ctrl-C (SIGINT to the whole process group, issue 37) ends tune with exit code 130 and no worker's traceback."""

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


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after "pid (comm)" (state, ppid, ...: stat(5)'s 3rd on), or None when there is
    no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text.rsplit(")", 1)[1].split()


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of ``pid``, or None when there is no such process."""
    fields = _stat_fields(pid)
    return None if fields is None else (fields[0], int(fields[1]))


def _alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")  # a zombie has ended (whoever reaps it)


needs_two_workers = pytest.mark.skipif(not Path("/proc/self/stat").exists() or (os.cpu_count() or 1) < 2,
                                       reason="needs Linux /proc and 2 cores for 2 worker processes")


@needs_two_workers
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_tune_workers_die_with_tune(tmp_path, sig):
    tune = subprocess.Popen(_tune_command(tmp_path / "out"), cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    workers: list[int] = []
    try:
        workers = _wait_for_workers(tune)
        tune.send_signal(sig)
        tune.wait(30)
        assert not _left(workers), f"worker processes {_left(workers)} outlived pyhpa tune ({sig.name})"
    finally:
        _end(tune, workers)


@needs_two_workers
@pytest.mark.parametrize("when", ["started", "replaying"])
def test_ctrl_c_ends_tune_quietly(tmp_path, when):
    """Ctrl-C in a terminal sends SIGINT to the whole foreground process group: tune and its workers. tune ends
    with exit code 130, at most one line on stderr (no worker's ``KeyboardInterrupt`` traceback), no output
    files, and no worker left. ``started``: as soon as the workers exist (before their first replay: a worker
    forked a moment ago must not raise either); ``replaying``: once a worker has spent CPU time on a replay."""
    out = tmp_path / "out"
    # its own process group, as a terminal's job, and SIGINT's default action, as a terminal gives it (a suite
    # started in the background by a non-interactive shell, as CI may start it, inherits SIGINT ignored, and
    # Python then keeps it ignored: Ctrl-C would do nothing, as it rightly does to a background job)
    tune = subprocess.Popen(_tune_command(out), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    workers: list[int] = []
    try:
        workers = _wait_for_workers(tune)
        if when == "replaying":
            deadline = time.monotonic() + 240
            while max(_cpu_ticks(w) for w in workers) < 20 and time.monotonic() < deadline and tune.poll() is None:
                time.sleep(0.1)
            assert max(_cpu_ticks(w) for w in workers) >= 20, "no worker started a replay"
        os.killpg(tune.pid, signal.SIGINT)
        _, err = tune.communicate(timeout=120)
        assert tune.returncode == 130, err
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
        assert len(err.strip().splitlines()) <= 1, err
        assert not out.exists() or not any(out.iterdir()), sorted(out.iterdir())
        assert not _left(workers), f"worker processes {_left(workers)} outlived pyhpa tune (SIGINT)"
    finally:
        _end(tune, workers)


def _tune_command(out: Path) -> list[str]:
    """A tune of 500 trials on 30 hours with 2 workers: it runs long past any signal the tests send."""
    return [sys.executable, "-m", "pyhpa.cli.main", "tune", "--hpa", "examples/tune/web-hpa.yaml",
            "--target", "benchmarks/proactive/deployment.yaml", "--profile", "benchmarks/proactive/profile.yaml",
            "--trace", "benchmarks/data/nasa_http_1995-07_per_minute.csv.gz", "--column", "requests_per_second",
            "--load-scale", "100", "--start", "1995-07-08", "--end", "1995-07-09T06:00:00", "--held-out", "21600",
            "--trials", "500", "--timeout", "600", "--jobs", "2", "--no-progress", "--output-dir", str(out)]


def _wait_for_workers(tune: subprocess.Popen) -> list[int]:
    """The pids of ``tune``'s 2 worker processes, once both exist."""
    workers: list[int] = []
    deadline = time.monotonic() + 240
    while len(workers) < 2 and time.monotonic() < deadline and tune.poll() is None:
        time.sleep(0.2)
        workers = _children(tune.pid)
    assert len(workers) >= 2, ("no worker processes started", tune.poll(), tune.stderr.read() if tune.poll() else "")
    return workers


def _left(workers: list[int]) -> list[int]:
    """The processes of ``workers`` still alive after tune ended (the kernel gets up to 30 s to end them)."""
    deadline = time.monotonic() + 30
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [w for w in workers if _alive(w)]


def _end(tune: subprocess.Popen, workers: list[int]) -> None:
    """Kill what this test started, should an assertion have failed before it ended."""
    if tune.poll() is None:
        tune.kill()
        tune.wait()
    for w in workers:
        if _alive(w):
            os.kill(w, signal.SIGKILL)


def _cpu_ticks(pid: int) -> int:
    """The CPU time ``pid`` has used (user + system, clock ticks; 0 once it is gone)."""
    fields = _stat_fields(pid)
    return 0 if fields is None else int(fields[11]) + int(fields[12])  # stat(5)'s utime (14th) and stime (15th)
