"""A simulated cluster advanced in steps (``Cluster.advance_to``, what lets one clock drive many, as a fleet will)
gives exactly what one ``run`` gives: the same timeline rows, scale events and figures, to the last bit."""

from __future__ import annotations

import random
from dataclasses import asdict

import pytest

from pyhpa.adapters.autoscaler import find_autoscaler
from pyhpa.adapters.snapshot import read_document
from pyhpa.simulate import Settings, input_files, load_autoscaler, read_load, read_workload
from pyhpa.simulate.cluster import Cluster


def _cluster(seed: int, start: str, end: str) -> Cluster:
    files = input_files([], None, None, None, None)  # the bundled example: php-apache on NASA's trace
    profile, target = read_workload(files)
    settings = Settings(seed=seed)
    hpa_file = str(files["hpa"][0])
    h = load_autoscaler(find_autoscaler(read_document(hpa_file), hpa_file), hpa_file, target, settings)
    load = read_load(files, [h], profile, target, start=start, end=end)
    tr = load.trace
    return Cluster(h.hpa, target, profile, h.config, tr.times, load.rps, tr.values, tr.start, tr.end,
                   h.sync_period_seconds, settings.seed, load.outages, history=load.history)


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
