"""The fleet file (``pyhpa.fleet.spec``): its defaults are the node autoscalers' own, and a bad fleet file is one
line naming the file, the workload (or node pool) and the field (issue 38's list: a workload naming no pool, a pod
larger than any node, a negative price, names used twice, traces that do not overlap in time)."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from pyhpa.adapters.errors import InputError
from pyhpa.fleet import spec as spec_module
from pyhpa.fleet.spec import (
    MAX_WORKLOADS,
    ConsolidationPolicy,
    Expander,
    Model,
    ScoringStrategy,
    load_fleet,
    read_fleet_file,
)
from pyhpa.simulate import BUNDLED, bundled_path
from pyhpa.simulate.trace import MAX_VALUE, load_trace

DAY = 86400.0


def _fleet(**spec) -> dict:
    """Two workloads of the bundled example (php-apache on NASA's trace, the second shifted by one hour) on one
    pool."""
    workload = {"autoscaler": str(bundled_path("hpa")), "target": str(bundled_path("target")),
                "profile": str(bundled_path("profile")),
                "trace": {"file": str(bundled_path("trace")), "column": BUNDLED["column"]}}
    base = {"nodePools": [{"name": "general", "instanceTypes": [
                {"name": "m5.xlarge", "cpu": "4", "memory": "16Gi", "pricePerHour": 0.192}],
                "daemonSetOverhead": {"cpu": "200m", "memory": "512Mi"}, "maxNodes": 20}],
            "workloads": [{"name": "web", **workload},
                          {"name": "api", **copy.deepcopy(workload)}]}
    base["workloads"][1]["trace"]["shift"] = "1h"
    base.update(spec)
    return {"apiVersion": "pyhpa.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "shop"}, "spec": base}


def _write(tmp_path: Path, doc: dict) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _error(tmp_path: Path, doc: dict) -> str:
    with pytest.raises(InputError) as err:
        load_fleet(_write(tmp_path, doc))
    text = str(err.value)
    assert "\n" not in text
    return text


def test_a_fleet_reads_every_file_and_fills_the_node_autoscalers_own_defaults(tmp_path):
    fleet = load_fleet(_write(tmp_path, _fleet()))
    spec = fleet.spec
    assert spec.scheduler.scoring_strategy is ScoringStrategy.LEAST_ALLOCATED
    ca, karpenter = spec.node_autoscaler.cluster_autoscaler, spec.node_autoscaler.karpenter
    assert spec.node_autoscaler.model is Model.CLUSTER_AUTOSCALER
    # kubernetes/autoscaler cluster-autoscaler/config/const.go and config/flags/flags.go
    assert (ca.scan_interval, ca.scale_down_unneeded_time, ca.scale_down_delay_after_add,
            ca.scale_down_utilization_threshold, ca.max_node_provision_time) == (10, 600, 600, 0.5, 900)
    assert (ca.initial_node_group_backoff_duration, ca.max_node_group_backoff_duration,
            ca.node_group_backoff_reset_timeout) == (300, 1800, 3 * 3600)
    assert ca.expander is Expander.LEAST_WASTE
    # kubernetes-sigs/karpenter pkg/operator/options and pkg/apis/v1/nodepool.go
    assert (karpenter.batch_idle_duration, karpenter.batch_max_duration, karpenter.consolidate_after) == (1, 10, 0)
    assert karpenter.consolidation_policy is ConsolidationPolicy.WHEN_EMPTY_OR_UNDERUTILIZED
    assert [b.nodes for b in karpenter.budgets] == ["10%"]
    pool = spec.node_pools[0]
    assert (pool.instance_types[0].cpu, pool.instance_types[0].memory) == (4000, 16 * 2**30)
    assert (pool.daemon_set_overhead.cpu, pool.daemon_set_overhead.memory) == (200, 512 * 2**20)
    web, api = fleet.workloads
    assert web.pool is pool and api.pool is pool
    assert api.trace.end - web.trace.end == 3600
    # the span every trace covers: the second starts an hour later (each trace is cut to it: ``test_each_workload_*``)
    assert (fleet.start, fleet.end) == (api.trace.start, web.trace.end)
    assert web.trace.start == fleet.start  # NASA's rows are a minute apart: one starts at the hour
    assert web.autoscaler.hpa.max_replicas >= 1 and web.target.name == "php-apache"


@pytest.mark.parametrize("predicts", [False, True])
def test_each_workload_replays_its_trace_scaled_shifted_and_cut_to_the_span_from_one_read_of_the_file(
        tmp_path, monkeypatch, predicts):
    """What ``load_trace`` gives with ``load_scale`` and the shift, over the fleet's span only (and the rows before
    it from ``historySeconds`` before the last of them when the autoscaler predicts: the forecaster's history, here
    the whole trace before the span, shorter than the default 7 days); the file is read once for every workload."""
    doc = _fleet()
    doc["spec"]["workloads"][1]["trace"]["scale"] = 2.5
    doc["spec"]["workloads"].append({**copy.deepcopy(doc["spec"]["workloads"][1]), "name": "other"})
    doc["spec"]["workloads"][2]["trace"].update(shift="90m", scale=0.3)
    if predicts:
        hpa = yaml.safe_load(bundled_path("hpa").read_text())
        hpa.update(apiVersion="pyhpa.dev/v1alpha1", kind="HorizontalAutoscaler")
        hpa["spec"]["prediction"] = {}
        (tmp_path / "predictive.yaml").write_text(yaml.safe_dump(hpa))
        for w in doc["spec"]["workloads"]:
            w["autoscaler"] = str(tmp_path / "predictive.yaml")
    reads = []
    monkeypatch.setattr(spec_module, "load_trace", lambda *a, **k: reads.append(a) or load_trace(*a, **k))
    fleet = load_fleet(_write(tmp_path, doc), start=None, end=None)
    assert len(reads) == 1
    column = BUNDLED["column"]
    for w, (scale, shift) in zip(fleet.workloads, [(1.0, 0), (2.5, 3600), (0.3, 5400)]):
        whole = load_trace(bundled_path("trace"), column, load_scale=scale, gaps="hold")
        times = whole.times + shift
        first = int(np.searchsorted(times, fleet.start, side="right")) - 1
        if predicts:
            first = int(np.argmax(times >= times[first - 1] - 7 * 86400)) if first > 0 else 0
            assert first == 0
        keep = slice(first, int(np.searchsorted(times, fleet.end, side="left")))
        assert np.array_equal(w.trace.times, times[keep]) and np.array_equal(w.trace.values[column],
                                                                            whole.values[column][keep])
        assert w.trace.end == whole.end + shift and w.trace.report.load_scale == scale
        assert predicts or len(w.trace.times) < len(whole.times)


def test_a_scale_beyond_the_largest_load_outside_the_span_is_still_the_workload_s_trace_scale(tmp_path):
    """The scale is checked over every row of the file, as ``pyhpa simulate --load-scale`` checks it, not only
    over the rows the fleet's span keeps (the first row here is before it)."""
    rows = pd.read_csv(bundled_path("trace"), dtype=str)
    rows.loc[0, BUNDLED["column"]] = f"{MAX_VALUE / 10:g}"
    rows.to_csv(tmp_path / "spike.csv", index=False)
    doc = _fleet()
    doc["spec"]["workloads"][0]["trace"].update(file=str(tmp_path / "spike.csv"), scale=20)  # web: not shifted
    text = _error(tmp_path, doc)
    assert f": workload web: spec.workloads[0].trace.scale: 20 times column {BUNDLED['column']!r}" in text


def test_settings_in_the_projects_own_spelling_are_read(tmp_path):
    doc = _fleet(nodeAutoscaler={"model": "karpenter",
                                 "cluster-autoscaler": {"scan-interval": "30s", "scale-down-unneeded-time": "5m",
                                                        "expander": "price",
                                                        "initial-node-group-backoff-duration": "1m"},
                                 "karpenter": {"consolidateAfter": "Never", "consolidationPolicy": "WhenEmpty",
                                               "batchMaxDuration": "20s", "budgets": [{"nodes": "2"}]}},
                 scheduler={"scoringStrategy": "MostAllocated"})
    spec = read_fleet_file(_write(tmp_path, doc))
    assert spec.node_autoscaler.model is Model.KARPENTER
    assert spec.scheduler.scoring_strategy is ScoringStrategy.MOST_ALLOCATED
    ca, karpenter = spec.node_autoscaler.cluster_autoscaler, spec.node_autoscaler.karpenter
    assert (ca.scan_interval, ca.scale_down_unneeded_time, ca.expander) == (30, 300, Expander.PRICE)
    assert ca.initial_node_group_backoff_duration == 60
    assert karpenter.consolidate_after == math.inf  # Never: no consolidation
    assert (karpenter.consolidation_policy, karpenter.batch_max_duration) == (ConsolidationPolicy.WHEN_EMPTY, 20)
    assert [b.nodes for b in karpenter.budgets] == ["2"]


def test_a_workload_naming_no_pool(tmp_path):
    doc = _fleet()
    doc["spec"]["workloads"][1]["nodePool"] = "gpu"
    text = _error(tmp_path, doc)
    assert text.startswith(f"{tmp_path / 'fleet.yaml'}: workload api: spec.workloads[1].nodePool: ")
    assert "names node pool 'gpu', which the fleet has not (its pools: general)" in text


def test_a_workload_whose_node_selector_matches_no_pool(tmp_path):
    docs = list(yaml.safe_load_all(bundled_path("target").read_text()))
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    deployment["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "batch"}
    (tmp_path / "deploy.yaml").write_text(yaml.safe_dump_all(docs))
    doc = _fleet()
    doc["spec"]["nodePools"][0]["labels"] = {"pool": "general"}
    doc["spec"]["workloads"][0]["target"] = "deploy.yaml"  # relative to the fleet file's folder
    text = _error(tmp_path, doc)
    assert ": workload web: spec.workloads[0].nodePool: names no pool: the nodeSelector {'pool': 'batch'} of " \
           "Deployment default/php-apache matches no node pool (general); give nodePool" in text


def test_a_pod_larger_than_any_node(tmp_path):
    doc = _fleet()
    doc["spec"]["nodePools"][0]["instanceTypes"][0]["cpu"] = "300m"  # 200m of DaemonSets + php-apache's 200m
    text = _error(tmp_path, doc)
    assert ": workload web: spec.workloads[0].target: a pod of Deployment default/php-apache requests 200m CPU" in text
    assert "fits no node of node pool general (largest: m5.xlarge, 300m," in text


def test_a_negative_price(tmp_path):
    doc = _fleet()
    doc["spec"]["nodePools"][0]["instanceTypes"][0]["pricePerHour"] = -0.1
    text = _error(tmp_path, doc)
    assert text == (f"{tmp_path / 'fleet.yaml'}: node pool general: spec.nodePools[0].instanceTypes[0].pricePerHour: "
                    "expected `float` >= 0.0")


@pytest.mark.parametrize("where", ["workloads", "nodePools", "instanceTypes"])
def test_a_name_used_twice(tmp_path, where):
    doc = _fleet()
    spec = doc["spec"]
    if where == "workloads":
        spec["workloads"][1]["name"] = "web"
        expected = ": workload web: spec.workloads[1].name: workload 'web' is named twice"
    elif where == "nodePools":
        spec["nodePools"].append(copy.deepcopy(spec["nodePools"][0]))
        expected = ": node pool general: spec.nodePools[1].name: node pool 'general' is named twice"
    else:
        types = spec["nodePools"][0]["instanceTypes"]
        types.append(copy.deepcopy(types[0]))
        expected = (": node pool general: spec.nodePools[0].instanceTypes[1].name: instance type 'm5.xlarge' is "
                    "named twice")
    assert expected in _error(tmp_path, doc)


def test_traces_that_do_not_overlap_in_time(tmp_path):
    doc = _fleet()
    doc["spec"]["workloads"][1]["trace"]["shift"] = f"{int(3 * DAY)}s"  # NASA's slice is about two days
    text = _error(tmp_path, doc)
    assert ": workload api: spec.workloads[1].trace.shift: its trace starts at " in text
    assert "after the trace of workload web ends" in text


@pytest.mark.parametrize("change, expected", [
    (lambda s: s["nodePools"][0].update(minNodes=30), "spec.nodePools[0].minNodes: is 30, above maxNodes 20"),
    (lambda s: s["nodePools"][0].update(provisioningSeconds={"median": 90, "p90": 30}),
     "spec.nodePools[0].provisioningSeconds.p90: is 30, below the median 90"),
    (lambda s: s["nodePools"][0].update(maxNodes=10**9), "spec.nodePools[0].maxNodes: expected `int` <= 100000"),
    (lambda s: s["workloads"][0]["trace"].update(shift="soon"), "spec.workloads[0].trace.shift: malformed duration"),
    (lambda s: s["nodePools"][0]["instanceTypes"][0].update(memory="lots"), "instanceTypes[0].memory: "),
    (lambda s: s["workloads"][0].update(replicas=3), "spec.workloads[0]: object contains unknown field `replicas`"),
    (lambda s: s.update(workloads=[s["workloads"][0]] * (MAX_WORKLOADS + 1)),
     f"spec.workloads: expected `array` of length <= {MAX_WORKLOADS:,}".replace(",", "")),
    # issue 60: a workload's name becomes a file name (fleet tune's recommended/NAME.yaml): no path in it
    (lambda s: s["workloads"][0].update(name="../evil"),
     "workload #1: spec.workloads[0].name: '../evil' is not a valid name: an RFC 1123 subdomain"),
    (lambda s: s["workloads"][0].update(name="a/b"), "spec.workloads[0].name: 'a/b' is not a valid name"),
    # one rule for every duration, whatever its YAML type: finite and bounded
    (lambda s: s["workloads"][0]["trace"].update(shift=1e300),
     "spec.workloads[0].trace.shift: a shift of at most 36,600 days either way, got 1e+300"),
    (lambda s: s["workloads"][0]["trace"].update(shift="100000000h"), "trace.shift: a shift of at most 36,600 days"),
    (lambda s: s.update(nodeAutoscaler={"cluster-autoscaler": {"scale-down-unneeded-time": float("nan")}}),
     "scale-down-unneeded-time: a duration from 0 to 366 days, got nan"),
    (lambda s: s.update(nodeAutoscaler={"model": "karpenter", "karpenter": {"consolidateAfter": float("inf")}}),
     "consolidateAfter: a duration from 0 to 366 days, got inf"),
    (lambda s: s.update(nodeAutoscaler={"cluster-autoscaler": {"max-node-provision-time": -60}}),
     "max-node-provision-time: a duration from 0 to 366 days, got -60"),
    # a scan of 0 s never lets the clock move: refused, not run forever
    (lambda s: s.update(nodeAutoscaler={"cluster-autoscaler": {"scan-interval": "0s"}}),
     "spec.nodeAutoscaler.cluster-autoscaler.scan-interval: must be at least 1s"),
    (lambda s: s.update(nodeAutoscaler={"cluster-autoscaler": {"scan-interval": "1ns"}}), "scan-interval: must be at least"),
    # resources and prices: not negative, bounded
    (lambda s: s["nodePools"][0]["instanceTypes"][0].update(cpu="-4"),
     "instanceTypes[0].cpu: must not be negative (a quantity of millicores), got '-4'"),
    (lambda s: s["nodePools"][0]["instanceTypes"][0].update(cpu="1e300"), "instanceTypes[0].cpu: must be between"),
    (lambda s: s["nodePools"][0].update(daemonSetOverhead={"memory": "-1Gi"}),
     "daemonSetOverhead.memory: must not be negative"),
    (lambda s: s["nodePools"][0]["instanceTypes"][0].update(pricePerHour=float("inf")),
     "instanceTypes[0].pricePerHour: expected `float` <= 100000.0"),
])
def test_out_of_bounds_and_unknown_fields_name_their_field(tmp_path, change, expected):
    doc = _fleet()
    change(doc["spec"])
    assert expected in _error(tmp_path, doc)


def test_a_file_of_another_kind(tmp_path):
    doc = _fleet()
    doc["kind"] = "HorizontalAutoscaler"
    assert _error(tmp_path, doc).endswith("kind: is apiVersion 'pyhpa.dev/v1alpha1', kind 'HorizontalAutoscaler': a "
                                          "fleet file is apiVersion: pyhpa.dev/v1alpha1, kind: Fleet")


def test_a_missing_trace_file_names_the_workload(tmp_path):
    doc = _fleet()
    doc["spec"]["workloads"][0]["trace"]["file"] = "nowhere.csv"
    text = _error(tmp_path, doc)
    assert "nowhere.csv" in text and "\n" not in text


def test_a_column_the_trace_has_not_is_the_workload_s_field(tmp_path):
    doc = _fleet()
    doc["spec"]["workloads"][1]["trace"]["column"] = "nope"
    text = _error(tmp_path, doc)
    assert text.startswith(f"{tmp_path / 'fleet.yaml'}: workload api: spec.workloads[1].trace.column: no column "
                           "'nope' in the trace (columns: ")
    assert text.endswith(f"({bundled_path('trace')})")


def test_a_trace_moved_earlier_by_a_negative_duration_as_text_or_number(tmp_path):
    """``trace.shift`` may move a trace earlier: ``-1h`` as text is the number -3600 (issue 60: the number was
    taken and the text refused)."""
    from pyhpa.fleet.spec import read_fleet_file

    texts = []
    for shift in ("-1h", -3600, "-3600s"):
        doc = _fleet()
        doc["spec"]["workloads"][0]["trace"]["shift"] = shift
        path = tmp_path / "f.yaml"
        path.write_text(yaml.safe_dump(doc))
        texts.append(read_fleet_file(path).workloads[0].trace.shift)
    assert texts == [-3600.0] * 3


def test_a_start_without_an_offset_is_read_in_the_traces_offset_as_simulate_reads_it(tmp_path):
    """One rule for ``--start``/``--end`` across commands (issue 60): without an offset, a time is read in the
    trace's own offset (NASA's −04:00 here), as ``pyhpa simulate --start`` reads it (``time_bound``); with one, as
    written."""
    from pyhpa.simulate.trace import time_bound
    trace = load_trace(str(bundled_path("trace")), BUNDLED["column"])
    fleet = load_fleet(_write(tmp_path, _fleet()), start="1995-07-12T06:00:00", end="1995-07-12T18:00")
    assert fleet.start == time_bound("1995-07-12T06:00:00", trace, "--start") == \
        pd.Timestamp("1995-07-12T10:00:00Z").timestamp()
    assert fleet.end == pd.Timestamp("1995-07-12T22:00:00Z").timestamp()
    utc = load_fleet(_write(tmp_path, _fleet()), start="1995-07-12T06:00:00Z", end="1995-07-12T18:00:00+00:00")
    assert (utc.start, utc.end) == (fleet.start - 4 * 3600, fleet.end - 4 * 3600)


def test_a_start_without_an_offset_is_refused_when_the_traces_are_in_different_offsets(tmp_path):
    """A fleet whose traces are in different UTC offsets has no one offset to read a bare time in: refused, one line
    naming the flag and the offsets (with an offset, the same time is taken)."""
    frame = pd.read_csv(bundled_path("trace"))
    frame["timestamp"] = pd.to_datetime(frame["timestamp"], utc=True).dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    utc_trace = tmp_path / "nasa-utc.csv"
    frame.to_csv(utc_trace, index=False)
    doc = _fleet()
    doc["spec"]["workloads"][1]["trace"] = {"file": str(utc_trace), "column": BUNDLED["column"]}
    path = _write(tmp_path, doc)
    with pytest.raises(InputError) as err:
        load_fleet(path, start="1995-07-12T06:00:00")
    text = str(err.value)
    assert "\n" not in text and "--start" in text and "no UTC offset" in text
    assert "-04:00 (workload web)" in text and "Z (workload api)" in text
    with pytest.raises(InputError) as err:
        load_fleet(path, end="1995-07-12T18:00:00")
    assert "--end" in str(err.value)
    fleet = load_fleet(path, start="1995-07-12T06:00:00-04:00")
    assert fleet.start == pd.Timestamp("1995-07-12T10:00:00Z").timestamp()
