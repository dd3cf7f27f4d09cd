"""A simulated workload on a clock shared with other actors (``pyhpa.simulate.clock``, as a fleet runs it) gives
exactly what it gives alone: the same timeline rows, scale events and figures, to the last bit; and a workload whose
new pods a ``binder`` binds (a fleet's scheduler, an actor on the same clock) after the profile's own scheduling
delay gives exactly what the profile alone gives."""

from __future__ import annotations

import random
from dataclasses import asdict, replace

import pytest

from pyhpa.adapters.autoscaler import find_autoscaler
from pyhpa.adapters.snapshot import read_document
from pyhpa.simulate import Settings, input_files, load_autoscaler, read_load, read_workload
from pyhpa.simulate.clock import ATTEMPT, WORKLOAD, Clock
from pyhpa.simulate.cluster import Cluster


def _cluster(seed: int, start: str, end: str, profile_file=None, binder=None, load_scale=1.0) -> Cluster:
    files = input_files([], None, None, None, None)  # the bundled example: php-apache on NASA's trace
    if profile_file is not None:
        files = replace(files, profile=profile_file)
    profile, target = read_workload(files)
    settings = Settings(seed=seed)
    hpa_file = str(files.hpa[0])
    h = load_autoscaler(find_autoscaler(read_document(hpa_file), hpa_file), hpa_file, target, settings)
    load = read_load(files, [h], profile, target, start=start, end=end, load_scale=load_scale)
    tr = load.trace
    return Cluster(h.hpa, target, profile, h.config, tr.times, load.rps, tr.values, tr.start, tr.end,
                   h.sync_period_seconds, settings.seed, load.outages, history=load.history, binder=binder)


def _outcome(c: Cluster) -> tuple:
    return c.timeline, c.scale_events, asdict(c.stats), c.failed_syncs, c.decided_by, c.t


class Noise:
    """An actor that puts events of every order on the clock at random times (as a fleet's other actors do) and
    does nothing at them."""

    def __init__(self, clock: Clock, seed: int):
        self.clock, self.rng, self.runs = clock, random.Random(seed), 0

    def on_clock(self, t, _payload):
        self.runs += 1
        self.clock.at(t + self.rng.choice([0.0, 1e-6, 0.5, 7.0, 15.0, self.rng.uniform(0, 60)]),
                      self.rng.randrange(WORKLOAD + 1), self.on_clock)


def _on_clock(c: Cluster, *actors) -> None:
    """``c`` on a clock shared with ``actors`` (each given the clock: ``actor(clock)``), run to its end."""
    clock = Clock(c.t_begin, c.end)
    c.attach(clock)
    for make in actors:
        make(clock)
    clock.run()
    c.finish()


@pytest.mark.parametrize("seed", [0, 7])
def test_a_workload_on_a_clock_shared_with_other_actors_runs_as_alone(seed):
    """One clock for every actor: events of other actors between and at the workload's own (of every order) change
    nothing of it, to the last bit."""
    window = ("1995-07-12T06:00:00Z", "1995-07-12T18:00:00Z")
    whole = _cluster(seed, *window)
    whole.run()
    shared = _cluster(seed, *window)
    noise = []

    def start(clock):
        noise.append(Noise(clock, seed))
        for k in range(5):
            clock.at(shared.t_begin + k, k % (WORKLOAD + 1), noise[0].on_clock)

    _on_clock(shared, start)
    assert noise[0].runs > 5000 and len(whole.timeline) > 2000 and whole.scale_events  # it scaled, among many events
    assert _outcome(shared) == _outcome(whole)


class DelayBinder:
    """Binds each new pod after the profile's ``pod_scheduling_seconds`` (times the pod's own jitter), as the
    cluster does without a binder, an actor on the cluster's clock (a bind at T comes before the workload's own
    events at T, as a fleet's scheduling attempts do); pods deleted while Pending are not bound."""

    def __init__(self, delay: float):
        self.delay = delay
        self.clock: Clock | None = None
        self.gone: set[str] = set()
        self.bound = 0

    def start(self, clock: Clock) -> None:
        self.clock = clock

    def created(self, cluster, pod, t):
        self.clock.at(t + self.delay * pod.factors[0], ATTEMPT, self._bind, (cluster, pod))

    def removed(self, cluster, pod):
        self.gone.add(pod.name)

    def _bind(self, t, payload):
        cluster, pod = payload
        if pod.name not in self.gone:
            cluster.bind(pod, t)
            self.bound += 1


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
    _on_clock(bound, binder.start)
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
