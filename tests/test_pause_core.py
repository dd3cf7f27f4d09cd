"""Pause (issue 22): the annotations' rule in the decision core, and their parsing."""

from __future__ import annotations

from dataclasses import replace

from builders import NOW, cpu_hpa, cpu_pods, old_memory, scale

from pyhpa.adapters.autoscaler import read_autoscaler
from pyhpa.adapters.pause import pause_from_annotations
from pyhpa.core import ControllerConfig, Memory, PauseSpec, SyncInputs, decide, with_status

CFG = ControllerConfig()


def _decide(pause, usages, current, memory=None, now=NOW, hpa=None):
    pods, samples = cpu_pods(usages, now=now)
    hpa = replace(hpa or cpu_hpa(target=50, max_r=20), pause=pause)
    return decide(SyncInputs(hpa=hpa, scale=scale(current), pods=pods, samples=[samples],
                             memory=memory or old_memory(current), now=now, config=CFG))


def _cond(d, ctype="Paused"):
    return next((c for c in d.conditions if c.type == ctype), None)


def test_no_annotation_is_upstream_exact():
    with_none = _decide(None, [900] * 4, 4)
    assert with_none.desired_replicas == 8 and _cond(with_none) is None and with_none.status.pause is None
    assert not any(s.source == "Pause" for s in with_none.sources)


def test_paused_freezes_the_count_and_says_since_when():
    d = _decide(PauseSpec(paused=True), [900] * 4, 4)  # metrics want 8
    assert d.desired_replicas == 4 and not d.rescale
    c = _cond(d)
    assert (c.status, c.reason, c.last_transition_time) == ("True", "Paused", NOW)
    assert d.status.pause.since == NOW and d.status.pause.replicas == 4
    assert d.steps[-1].stage == "pause" and (d.steps[-1].before, d.steps[-1].after) == (8, 4)
    assert str(d.decided_by) == "Pause/paused"
    assert [e.reason for e in d.events if e.type == "Normal"] == ["Paused"]
    # a later sync keeps the time it was paused since, and emits no second Paused event
    hpa = with_status(replace(cpu_hpa(target=50, max_r=20), pause=PauseSpec(paused=True)), d.status)
    d2 = _decide(PauseSpec(paused=True), [100] * 4, 4, d.memory, NOW + 60, hpa)
    assert d2.desired_replicas == 4 and d2.status.pause.since == NOW
    assert not [e for e in d2.events if e.reason == "Paused"]


def test_paused_replicas_scales_and_wins_over_paused():
    d = _decide(PauseSpec(paused=True, replicas=2), [900] * 4, 4)
    assert d.rescale and d.desired_replicas == 2
    assert _cond(d).reason == "PausedReplicas" and str(d.decided_by) == "Pause/paused-replicas"
    assert "pyhpa.dev/paused-replicas is 2" in d.rescale_reason
    assert d.status.pause.replicas == 2
    # outside the spec's bounds too (KEDA: N as given), and also when the metrics fail
    pods, samples = cpu_pods([900] * 4)
    broken = replace(samples, pods=None, error="metrics API down")
    hpa = replace(cpu_hpa(min_r=3, max_r=20), pause=PauseSpec(replicas=0))
    d = decide(SyncInputs(hpa=hpa, scale=scale(4), pods=pods, samples=[broken], memory=old_memory(4), now=NOW,
                          config=CFG))
    assert d.rescale and d.desired_replicas == 0 and _cond(d).reason == "PausedReplicas"


def test_scale_in_and_scale_out_block_one_direction():
    up = _decide(PauseSpec(scale_in=True), [900] * 4, 4)
    assert up.desired_replicas == 8 and _cond(up).reason == "PausedScaleIn"
    assert up.decided_by.kind == "Metric"
    down = _decide(PauseSpec(scale_in=True), [100] * 4, 4)
    assert down.desired_replicas == 4 and str(down.decided_by) == "Pause/paused-scale-in"
    out_up = _decide(PauseSpec(scale_out=True), [900] * 4, 4)
    assert out_up.desired_replicas == 4 and _cond(out_up).reason == "PausedScaleOut"
    out_down = _decide(PauseSpec(scale_out=True), [100] * 4, 4)
    assert out_down.desired_replicas == 1
    both = _decide(PauseSpec(scale_in=True, scale_out=True), [900] * 4, 4)
    assert both.desired_replicas == 4 and _cond(both).reason == "Paused"


def test_invalid_value_warns_never_pauses_silently():
    spec = pause_from_annotations({"pyhpa.dev/paused": "yes please"})
    assert spec.problems and not spec.paused
    d = _decide(spec, [900] * 4, 4)
    assert d.desired_replicas == 8  # not paused
    c = _cond(d)
    assert (c.status, c.reason) == ("False", "InvalidPauseAnnotation") and "yes please" in c.message
    warnings = [e for e in d.events if e.reason == "InvalidPauseAnnotation"]
    assert warnings and warnings[0].type == "Warning" and "pyhpa.dev/paused" in warnings[0].message
    # a valid annotation next to an invalid one still applies; the invalid one is named
    spec = pause_from_annotations({"pyhpa.dev/paused": "true", "pyhpa.dev/paused-replicas": "five"})
    d = _decide(spec, [900] * 4, 4)
    assert d.desired_replicas == 4 and _cond(d).status == "True" and "five" in _cond(d).message
    assert any(e.reason == "InvalidPauseAnnotation" for e in d.events)


def test_parsing():
    assert pause_from_annotations({"other": "x"}) is None
    assert pause_from_annotations(None) is None
    assert pause_from_annotations({"pyhpa.dev/paused": "TRUE"}) == PauseSpec(paused=True)
    assert pause_from_annotations({"pyhpa.dev/paused": "false"}) == PauseSpec()
    assert pause_from_annotations({"pyhpa.dev/paused-replicas": " 3 "}) == PauseSpec(replicas=3)
    assert pause_from_annotations({"pyhpa.dev/paused-replicas": "-1"}).problems
    assert pause_from_annotations({"pyhpa.dev/paused-scale-out": "true"}) == PauseSpec(scale_out=True)
    doc = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "web", "namespace": "default", "annotations": {"pyhpa.dev/paused-replicas": "3"}},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "maxReplicas": 5}}
    assert read_autoscaler(doc).hpa.pause == PauseSpec(replicas=3)
    doc["apiVersion"], doc["kind"] = "pyhpa.dev/v1alpha1", "HorizontalAutoscaler"
    assert read_autoscaler(doc).hpa.pause == PauseSpec(replicas=3)


def test_resume_keeps_the_stabilization_memory():
    """High load, then paused while the load falls, then resumed: the scale-down still waits for the
    stabilization window (300 s) counted from the last high recommendation, made before the pause."""
    base = cpu_hpa(target=50, max_r=20)
    d = _decide(None, [900] * 4, 4, Memory([(NOW - 3600, 4)]), NOW, base)
    assert d.desired_replicas == 8
    hpa = with_status(base, d.status)
    mem = d.memory
    # paused at 8 for two minutes while the load drops
    t = NOW
    for _ in range(4):
        t += 30
        d = _decide(PauseSpec(paused=True), [100] * 8, 8, mem, t, replace(hpa, pause=PauseSpec(paused=True)))
        assert d.desired_replicas == 8
        hpa, mem = with_status(hpa, d.status), d.memory
    # resumed at NOW+150: still 8 (window of the recommendation 8 at NOW ends at NOW+300)
    t = NOW + 150
    d = _decide(None, [100] * 8, 8, mem, t, replace(hpa, pause=None))
    assert d.desired_replicas == 8 and str(d.decided_by) == "Stabilization/downscale"
    c = _cond(d)
    assert (c.status, c.reason) == ("False", "Resumed") and any(e.reason == "Resumed" for e in d.events)
    hpa, mem = with_status(hpa, d.status), d.memory
    d = _decide(None, [100] * 8, 8, mem, NOW + 301, replace(hpa, pause=None))
    assert d.desired_replicas < 8


def test_explain_shows_the_pause_as_a_step(tmp_path):
    import yaml
    from typer.testing import CliRunner

    from pyhpa.cli.main import app

    root = __import__("pathlib").Path(__file__).resolve().parent.parent
    snap = yaml.safe_load((root / "examples" / "explain" / "snapshot.yaml").read_text())
    snap["hpa"]["metadata"]["annotations"] = {"pyhpa.dev/paused-replicas": "2"}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(snap))
    r = CliRunner().invoke(app, ["explain", str(tmp_path / "s.yaml")], terminal_width=200)
    assert r.exit_code == 0, r.output
    assert "pause: 4 -> 2  [PausedReplicas] pyhpa.dev/paused-replicas is 2" in r.output
    assert "decided by: Pause/paused-replicas" in r.output
    out = CliRunner().invoke(app, ["explain", "-o", "json", str(tmp_path / "s.yaml")])
    import json
    d = json.loads(out.output)
    assert d["desiredReplicas"] == 2
    assert [c["reason"] for c in d["conditions"] if c["type"] == "Paused"] == ["PausedReplicas"]
