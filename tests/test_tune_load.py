"""``pyhpa tune`` on a busy machine: CPU-bound processes beside it, a worker process killed from outside, a
budget that runs out while replays are running. The search ends between trials and the best setting found so
far is recommended; no ``concurrent.futures`` error escapes. Nothing here asserts a duration."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pyhpa.tune import Objective, tune
from tests.test_tune import DEPLOYMENT, HOUR, PROFILE, T0, daily, iso, prepared, write_hpa, write_trace

PYHPA = Path(sys.executable).with_name("pyhpa")


def _workers_of(marker: str) -> list[int]:
    """Processes whose command line holds ``marker`` (tune's worker processes are forks of it: same command line)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            pids.append(int(entry.name))
    return pids


@pytest.mark.skipif(not PYHPA.exists(), reason="pyhpa's console script is not installed beside this Python")
def test_tune_beside_cpu_bound_processes_recommends_with_a_short_budget(tmp_path):
    """One CPU-bound process per core beside `pyhpa tune` (a worker per core, the default) and a budget of 4 s:
    the search ends between trials, the best setting so far is recommended, the exit is clean (code 0, no
    traceback, no worker process left)."""
    trace = write_trace(tmp_path / "daily.csv", daily(30))
    hpa = write_hpa(tmp_path / "hpa.yaml")
    out = tmp_path / "out-under-load"
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        done = subprocess.run(
            [str(PYHPA), "tune", "--hpa", str(hpa), "--target", str(DEPLOYMENT), "--profile", str(PROFILE), "--trace",
             str(trace), "--column", "rps", "--end", iso(T0 + 30 * HOUR), "--held-out", str(6 * HOUR), "--sync-period",
             "60", "--max-overloaded-fraction", "0.02", "--timeout", "4", "--output-dir", str(out), "--no-progress",
             "-o", "json"], capture_output=True, text=True, timeout=600)
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "future" not in done.stderr
    summary = json.loads(done.stdout)
    assert summary["candidates"] >= 1 and summary["recommended"]["held_out"] is not None
    rec = yaml.safe_load((out / "recommended.yaml").read_text())
    assert rec["spec"]["maxReplicas"] >= rec["spec"]["minReplicas"]
    assert _workers_of(str(out)) == []


def test_a_worker_killed_mid_search_costs_its_replay_not_the_recommendation(tmp_path):
    """A worker process killed from outside (as the OOM killer does) breaks Python's process pool; tune starts
    the workers anew, replays what was lost and recommends; the note says what happened."""
    p = prepared(tmp_path, write_trace(tmp_path / "daily.csv", daily(30)))
    killed: list[int] = []
    # a child left by an earlier test in this process (the suite's workers run many) is not tune's worker
    earlier = {c.pid for c in multiprocessing.active_children()}

    def kill_one_worker(done: int, total: int, elapsed: float) -> None:
        if not killed:
            worker = next(c for c in multiprocessing.active_children() if c.pid not in earlier)
            os.kill(worker.pid, signal.SIGKILL)
            killed.append(worker.pid)

    result = tune(p, Objective("overloaded_fraction", 0.02), trials=6, timeout=600, jobs=2, progress=kill_one_worker)
    assert killed
    # the 6 trials, and what the held-out check derived (origin set); none lost
    assert result.recommended.held_out is not None and sum(1 for e in result.evaluations if not e.origin) == 6
    assert any("lost with their worker process" in n and "started anew" in n for n in result.notes), result.notes


def test_a_replay_past_the_budget_stops_itself_and_is_left_out(tmp_path):
    """Once a setting met the objective, every replay carries the budget's end plus ``DRAIN_SHARE``: a replay still
    running then stops at its next sync (``DEADLINE``); the search leaves it out, tells Optuna it failed, and ends
    within the drain share of the budget. The clock here counts its own calls (1 ms each): no wall time."""
    from dataclasses import replace

    from pyhpa.simulate import replay
    from pyhpa.tune import Setting
    from pyhpa.tune.search import DEADLINE, DRAIN_SHARE, Stop, _Search

    p = prepared(tmp_path, write_trace(tmp_path / "daily.csv", daily(30)))
    late = Stop(deadline=1.0, clock=lambda: 2.0)
    run = replay(p.autoscaler_for(Setting(target=60, min_replicas=2, max_replicas=20)), "late", p.target, p.profile,
                 p.tuning.load, p.settings, stop=late)
    assert run.cluster.stopped and late.reason(run.cluster) == DEADLINE and len(run.cluster.timeline) == 1

    calls = [0]

    def clock() -> float:
        calls[0] += 1
        return calls[0] * 0.001

    timeout = 3.0  # about two replays of the tuning part in this clock: the fourth starts close to the end
    s = _Search(replace(p, held_out=None), Objective("overloaded_fraction", 0.02), 50, timeout, 1, 0, None, clock)
    current, evaluations = s.run()
    assert s.cut >= 1 and s.incumbent() is not None
    assert len(evaluations) + s.cut == s.asked < 50
    assert not any(e.in_sample.stopped == DEADLINE for e in evaluations)
    failed = [t for t in s.study.trials if t.state.name == "FAIL"]
    assert len(failed) == s.cut
    assert s.elapsed() <= timeout * (1 + DRAIN_SHARE) + 0.05


@pytest.mark.parametrize("max_replicas, counts", [(30, True), (4, False)])
def test_the_current_object_that_met_the_objective_gives_the_first_replays_their_stops(tmp_path, max_replicas, counts):
    """Before any trial ran, the user's object (50 %) is the only candidate: when it met the objective, the first
    replays already stop at the budget's end (plus ``DRAIN_SHARE``) and once 25 % costlier than it; when it did not
    (capped at 4 pods, a third of the daily peak), they run to their end as before. The search's clock stands
    still: no wall time."""
    from dataclasses import replace

    from pyhpa.tune import Setting
    from pyhpa.tune.search import (
        DRAIN_SHARE,
        STOP_COSTLIER_MARGIN,
        STOP_COSTLIER_SHARE,
        Evaluation,
        _Runner,
        _Search,
        space,
    )

    p = prepared(tmp_path, write_trace(tmp_path / "daily.csv", daily(30)),
                 hpa=write_hpa(tmp_path / "hpa.yaml", max_replicas=max_replicas))
    s = _Search(replace(p, held_out=None), Objective("overloaded_fraction", 0.02), 10, 100.0, 1, 0, None, lambda: 5.0)
    with _Runner(s.p, 1) as s.runner:
        first = s.runner.map([(None, "tuning")])[0]
        s.whole = first.figures
        s.current = Evaluation(-1, space.current_setting(p.autoscaler.hpa, p.kind), first.figures)
        assert s.incumbent() is None and s.objective.met(first.figures) == counts
        stop = s.stop()
        if counts:
            assert stop.deadline == pytest.approx(5.0 + 100.0 * (1 + DRAIN_SHARE))  # t0 + budget + drain: its clock
            assert stop.pod_seconds == pytest.approx(
                (first.figures.pod_hours * (1 + STOP_COSTLIER_SHARE) + STOP_COSTLIER_MARGIN) * 3600)
        else:
            assert stop.deadline == float("inf") and stop.pod_seconds == float("inf")
        # a trial that is far costlier than the current object stops as such only when it counts
        s.ask(dict(target=30, min_replicas=4, max_headroom=2.0, scale_down_window_seconds=600, scale_up_percent=900))
        s.collect(all_=True)
        (e,) = s.evaluations
        assert e.setting == Setting(target=30.0, min_replicas=4, max_replicas=e.setting.max_replicas,
                                    scale_down_window_seconds=600, scale_up_percent=900)
        assert (e.in_sample.stopped == "costlier") == counts
