"""A simulated cluster advanced in steps (``Cluster.advance_to``, what lets one clock drive many, as a fleet will)
gives exactly what one ``run`` gives: the same timeline rows, scale events and figures, to the last bit; and a
cluster whose new pods a ``binder`` binds (a fleet's scheduler) after the profile's own scheduling delay gives
exactly what the profile alone gives."""

from __future__ import annotations

import heapq
import itertools
import math
import random
from dataclasses import asdict

import pytest

from pyhpa.adapters.autoscaler import find_autoscaler
from pyhpa.adapters.snapshot import read_document
from pyhpa.simulate import Settings, input_files, load_autoscaler, read_load, read_workload
from pyhpa.simulate.cluster import Cluster


def _cluster(seed: int, start: str, end: str, profile_file=None, binder=None, load_scale=1.0) -> Cluster:
    files = input_files([], None, None, None, None)  # the bundled example: php-apache on NASA's trace
    if profile_file is not None:
        files["profile"] = profile_file
    profile, target = read_workload(files)
    settings = Settings(seed=seed)
    hpa_file = str(files["hpa"][0])
    h = load_autoscaler(find_autoscaler(read_document(hpa_file), hpa_file), hpa_file, target, settings)
    load = read_load(files, [h], profile, target, start=start, end=end, load_scale=load_scale)
    tr = load.trace
    return Cluster(h.hpa, target, profile, h.config, tr.times, load.rps, tr.values, tr.start, tr.end,
                   h.sync_period_seconds, settings.seed, load.outages, history=load.history, binder=binder)


def _outcome(c: Cluster) -> tuple:
    return c.rows, c.scale_events, asdict(c.stats), c.failed_syncs, c.decided_by, c.t


@pytest.mark.parametrize("seed", [0, 7])
def test_a_run_taken_in_steps_is_the_run(seed):
    window = ("1995-07-12T06:00:00Z", "1995-07-12T18:00:00Z")
    whole = _cluster(seed, *window)
    whole.run()
    stepped = _cluster(seed, *window)
    rng = random.Random(seed)
    steps = 0
    while stepped.t < stepped.end:
        # to the next event (as a fleet's clock does), or to an instant between events
        limit = stepped.next_event() if rng.random() < 0.5 else stepped.t + rng.uniform(0, 120)
        stepped.advance_to(min(limit, stepped.end))
        steps += 1
    stepped.finish()
    assert steps > 1000 and len(whole.rows) > 2000 and whole.scale_events  # it scaled, in many steps
    assert _outcome(stepped) == _outcome(whole)


def test_advancing_to_before_the_next_event_changes_nothing():
    c = _cluster(0, "1995-07-12T06:00:00Z", "1995-07-12T07:00:00Z")
    c.advance_to(c.next_event())
    before = (c.t, len(c.rows), asdict(c.stats))
    c.advance_to(c.next_event() - 1e-6)
    assert (c.t, len(c.rows), asdict(c.stats)) == before


class DelayBinder:
    """Binds each new pod after the profile's ``pod_scheduling_seconds`` (times the pod's own jitter), as the
    cluster does without a binder; pods deleted while Pending are not bound."""

    def __init__(self, delay: float):
        self.delay = delay
        self.due: list = []
        self.gone: set[str] = set()
        self.order = itertools.count()
        self.bound = 0

    def created(self, cluster, pod, t):
        heapq.heappush(self.due, (t + self.delay * pod.factors[0], next(self.order), pod))

    def removed(self, cluster, pod):
        self.gone.add(pod.name)

    def run(self, c: Cluster) -> None:
        """One clock for the cluster and the binder: a bind at T comes after the cluster's events before T and
        before its events at T (a pod's transitions come first at any instant)."""
        while True:
            t = min(c.next_event(), self.due[0][0] if self.due else math.inf)
            if t >= c.end:
                break
            if self.due and self.due[0][0] == t:
                c.advance_to(math.nextafter(t, -math.inf))
                c.catch_up(t)
                while self.due and self.due[0][0] == t:
                    pod = heapq.heappop(self.due)[2]
                    if pod.name not in self.gone:
                        c.bind(pod, t)
                        self.bound += 1
            c.advance_to(t)
        c.advance_to(c.end)
        c.finish()


@pytest.mark.parametrize("profile", ["bundled", "slow and jittery"])
def test_pods_bound_by_a_binder_after_the_profiles_delay_run_as_the_profile_alone(tmp_path, profile):
    """The fleet's consistency in small: a scheduler that binds at once, after the same delay, changes nothing."""
    window = ("1995-07-12T06:00:00Z", "1995-07-12T18:00:00Z")
    profile_file, delay = None, 1.0  # the bundled profile's pod_scheduling_seconds
    if profile != "bundled":
        profile_file = tmp_path / "profile.yaml"
        profile_file.write_text("pod_scheduling_seconds: 40\ncontainer_start_seconds: 20\napp_startup_seconds: 10\n"
                                "startup_jitter_fraction: 0.5\ncpu_millicore_seconds_per_request: 120\n"
                                "pod_capacity_rps: 10\nmetric_resolution_seconds: 15\n")
        delay = 40.0
    alone = _cluster(3, *window, profile_file)
    alone.run()
    binder = DelayBinder(delay)
    bound = _cluster(3, *window, profile_file, binder=binder)
    binder.run(bound)
    assert binder.bound > 10 and len(alone.scale_events) > 5
    assert _outcome(bound) == _outcome(alone)


def test_a_pod_no_node_takes_stays_pending_and_serves_nothing():
    """A binder that never binds (NASA's load times 14, which one pod cannot serve): the new pods stay Pending and
    serve nothing, so requests go unserved that the same autoscaler serves when its pods start."""

    class Never(DelayBinder):
        def created(self, cluster, pod, t):
            pass

    window = ("1995-07-12T06:00:00Z", "1995-07-12T18:00:00Z")
    alone = _cluster(0, *window, load_scale=14)
    alone.run()
    stuck = _cluster(0, *window, binder=Never(0.0), load_scale=14)
    stuck.run()
    initial = stuck.target.replicas
    assert stuck.stats.running_pod_seconds <= initial * (stuck.end - stuck.t0) + 1e-6
    assert stuck.stats.unserved_requests > 10 * alone.stats.unserved_requests + 1000
    assert stuck.stats.running_pod_seconds < alone.stats.running_pod_seconds / 2
    assert all(not p.bound for p in stuck.pods[initial:]) and len(stuck.pods) > initial
