"""Every upstream decision case, through the same path as ``pyhpa explain --output json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyhpa.adapters.parse import milli
from pyhpa.adapters.snapshot import decision_json, load_snapshots, run_snapshot

DATA = Path(__file__).parent / "data" / "conformance"
FILES = ["replica_calculator.json", "behavior.json", "controller.json"]


def _cases():
    for f in FILES:
        for snap in load_snapshots(DATA / f, lenient=True):
            yield pytest.param(snap, id=f"{f.split('.')[0]}:{snap.name}")


def _check_proposals(got: list[dict], want: list[dict]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g["error"] is not None) == w.get("error", False), g
        if "replicas" in w:
            assert g["replicas"] == w["replicas"]
        if "utilization" in w:
            assert g["utilization"] == w["utilization"]
        if "rawValue" in w:
            assert g["rawValue"] is not None and milli(g["rawValue"]) == milli(w["rawValue"])
            assert g["rawValue"] == w["rawValue"]


@pytest.mark.parametrize("snap", list(_cases()))
def test_upstream_case(snap):
    out = decision_json(snap.name, run_snapshot(snap))
    json.dumps(out)  # the explain line must serialize
    want = snap.expect
    if "proposals" in want:
        _check_proposals(out["proposals"], want["proposals"])
    if "desiredReplicas" in want:
        assert out["desiredReplicas"] == want["desiredReplicas"]
    conds = {c["type"]: c for c in out["conditions"]}
    for w in want.get("conditions", []):
        assert w["type"] in conds, f"missing condition {w['type']}: {out['conditions']}"
        got = conds[w["type"]]
        assert (got["status"], got["reason"]) == (w["status"], w["reason"]), got
