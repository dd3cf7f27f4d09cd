"""One shape for every source (``pyhpa.core.sources``): the sources ``decide`` loops over are the documented ones,
in the documented order, each a ``Source``; what a source returns is applied one way; the fallback's failure cap
is the core's."""

from __future__ import annotations

import re
from pathlib import Path

from pyhpa.core import FallbackSpec, Memory, SyncInputs, capped_failures, decide, with_status
from pyhpa.core.model import ConditionType, MetricFailures, SourceKind
from pyhpa.core.reconcile import SOURCES
from pyhpa.core.sources import Source, Stage
from tests.builders import NOW, cpu_pods, scale
from tests.test_fallback_core import CFG, World, down, fb, hpa

ROOT = Path(__file__).resolve().parent.parent


def test_the_sources_are_the_documented_ones_in_the_documented_order():
    """docs/combination.md's table of stages names the sources in the order decide evaluates them."""
    text = (ROOT / "docs" / "combination.md").read_text()
    table = text[text.index("| stage | sources | then |"):]
    documented = []
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        documented += re.findall(r"`(\w+)`", line.split("|")[2])
    assert [s.kind.value for s in SOURCES] == documented
    assert [s.stage for s in SOURCES] == sorted(s.stage for s in SOURCES)
    assert {s.kind for s in SOURCES} == {SourceKind.SCHEDULE, SourceKind.METRIC, SourceKind.FALLBACK,
                                          SourceKind.PREDICTION, SourceKind.SATURATION, SourceKind.PAUSE}
    for s in SOURCES:
        assert isinstance(s.stage, Stage)
        assert all(callable(getattr(s, m)) for m in ("enabled", "evaluate", "retired"))
        assert set(Source.__annotations__) <= set(dir(s))


def test_a_source_removed_from_the_spec_takes_its_condition_and_memory_with_it():
    w = World(hpa(fallback=fb(replicas=8, threshold=0)), replicas=3)
    d = w.sync(down())
    assert any(c.type == ConditionType.FALLBACK for c in d.conditions) and w.memory.metric_failures
    w.hpa = with_status(hpa(), d.status)  # the fallback removed from the spec
    d = w.sync(down())
    assert not any(c.type == ConditionType.FALLBACK for c in d.conditions)
    assert d.memory.metric_failures == {} and d.status.metric_health is None


def test_the_failure_count_written_is_capped_by_the_core_and_decides_as_the_full_count():
    """``status.metricHealth`` and the memory to persist count a failing metric's syncs up to one past its
    threshold (more change no decision); the working memory keeps the full count."""
    w = World(hpa(fallback=fb(replicas=8, threshold=2)), replicas=3)
    for _ in range(6):
        d = w.sync(down())
    [h] = d.status.metric_health
    assert h.number_of_failures == 3 and h.fallback_replicas == 8
    assert w.memory.metric_failures["Resource/cpu"].number_of_failures == 6
    persisted = capped_failures(w.memory, w.hpa)
    assert persisted.metric_failures["Resource/cpu"] == MetricFailures(
        number_of_failures=3, first_failure_time=NOW + 15, fallback_since=NOW + 45)
    # deciding from the capped memory gives what the full memory gives
    pods, _ = cpu_pods([500] * 8, now=w.now + 15)
    full = decide(SyncInputs(hpa=w.hpa, scale=scale(8), pods=pods, samples=[down()], memory=w.memory, now=w.now + 15,
                             config=CFG))
    capped = decide(SyncInputs(hpa=w.hpa, scale=scale(8), pods=pods, samples=[down()], memory=persisted, now=w.now + 15,
                               config=CFG))
    assert (capped.desired_replicas, capped.status, capped.events) == (full.desired_replicas, full.status, full.events)
    # a duration-only fallback: the count never decides, it is written as 1
    w = World(hpa(fallback=FallbackSpec(replicas=5, failure_duration_seconds=30)), replicas=2)
    for _ in range(4):
        d = w.sync(down())
    assert [h.number_of_failures for h in d.status.metric_health] == [1]
    assert capped_failures(Memory(), w.hpa) == Memory()
