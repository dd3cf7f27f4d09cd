"""Issue 32: upstream v1.37.2's own HPA controller as the reference (``tools/upstream/hpa-decide``).

- every case of ``tests/data/conformance/`` (all files) is decided by upstream's code as its ``expect`` says;
- the feature gates upstream's controller reads have, in pyhpa, the defaults v1.37.2 gives them (read from
  upstream's gate table through the harness: ``hpa-decide --gates``);
- a few hundred fresh random snapshots (``benchmarks/upstream_diff.py``, a seed that changes daily) are decided
  by pyhpa exactly as by upstream, bar Go's platform-defined float-to-int32 conversions.

hpa-decide is built from the Go modules (controlplane/build.py; Go 1.26) before the tests start. When it cannot be
built these tests are skipped with what failed and the command that fixes it (counted as "control-plane tests not
run" in pytest's summary line), except in CI (``CI`` set), where they fail (``tests/control_plane_gate.py``).
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_regressions import check

from pyhpa.adapters.snapshot import FEATURE_GATES, UPSTREAM_ONLY_GATES
from pyhpa.core import ControllerConfig

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "conformance"
FILES = sorted(DATA.glob("*.json"))


@pytest.fixture(scope="module")
def hpa_decide() -> str:
    """The built hpa-decide (built now if missing or stale)."""
    from control_plane_gate import require_control_plane

    from controlplane.build import bin_dir

    require_control_plane(("hpa-decide",))
    return str(bin_dir() / "hpa-decide")


def _decide(exe: str, *args: str) -> list[dict]:
    res = subprocess.run([exe, *args], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    return [json.loads(line) for line in res.stdout.splitlines()]


def _check_table_case(out: dict, want: dict) -> None:
    """Upstream's own test tables: only what each test asserts (test_conformance's rule)."""
    if "proposals" in want:
        assert len(out["proposals"]) == len(want["proposals"]), out["proposals"]
        for got, w in zip(out["proposals"], want["proposals"]):
            assert (got["error"] is not None) == w.get("error", False), got
            for key in ("replicas", "utilization", "rawValue"):
                if key in w:
                    assert got[key] == w[key], (key, got)
    if "desiredReplicas" in want:
        assert out["desiredReplicas"] == want["desiredReplicas"]
    conds = {c["type"]: c for c in out["conditions"]}
    for w in want.get("conditions", []):
        assert w["type"] in conds, f"missing condition {w['type']}: {out['conditions']}"
        assert (conds[w["type"]]["status"], conds[w["type"]]["reason"]) == (w["status"], w["reason"])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_upstream_reproduces_every_expected_decision(hpa_decide, path):
    cases = json.loads(path.read_text())["cases"]
    lines = _decide(hpa_decide, str(path))
    assert [x["name"] for x in lines] == [c["name"] for c in cases]
    for case, out in zip(cases, lines):
        try:
            if path.name.startswith("regressions"):
                check(out, case["expect"], case.get("absentConditions", []))
            else:
                _check_table_case(out, case["expect"])
        except AssertionError as err:
            raise AssertionError(f"{path.name}: {case['name']}: {err}") from None


def _ours(path: Path) -> list[dict]:
    """``pyhpa explain --lenient -o json`` of every snapshot of ``path``, in this process."""
    from pyhpa.adapters.snapshot import decision_json, load_snapshots, run_snapshot

    return [decision_json(snap.name, run_snapshot(snap), snap.inputs.hpa, snap.inputs.now)
            for snap in load_snapshots(path, lenient=True)]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_case_s_whole_status_and_events_are_upstreams(hpa_decide, path):
    """Issue 58: the whole status the sync leaves (``currentMetrics`` with an empty entry for a failed metric and
    ``null`` when no metric was computed, each metric's selector, an Object's ``describedObject.apiVersion``,
    ``lastScaleTime``, the conditions with their times, in order) and every event of the sync (type, reason,
    message, in order), upstream's from its recorder. One difference is not pyhpa's: a case whose gates need an
    emulated older version (``emulationVersion``) runs upstream without HPAGeneration, which writes no
    ``observedGeneration``; pyhpa behaves as v1.37 (``UPSTREAM_ONLY_GATES``)."""
    ours, theirs = _ours(path), _decide(hpa_decide, str(path))
    assert [o["name"] for o in ours] == [t["name"] for t in theirs]
    compared = 0
    for o, t in zip(ours, theirs):
        if "status" not in t:  # a normalization alone (a recommendation given): no sync, no status
            continue
        status = dict(o["status"])
        if t.get("emulationVersion") and "observedGeneration" not in t["status"]:
            status.pop("observedGeneration")
        assert status == t["status"], f"{path.name}: {o['name']}"
        assert o["events"] == t["events"], f"{path.name}: {o['name']}"
        compared += 1
    assert compared > 0 or path.name == "behavior.json"


def test_hpa_decide_takes_yaml_lists_and_several_files(hpa_decide, tmp_path):
    """FILE is JSON or YAML, one snapshot, a list or {"cases": [...]}; several FILEs are decided in order."""
    import yaml

    cases = json.loads((DATA / "controller.json").read_text())["cases"][:3]
    (tmp_path / "one.yaml").write_text(yaml.safe_dump(cases[0]))
    (tmp_path / "two.yaml").write_text(yaml.safe_dump_all(cases[1:]))
    lines = _decide(hpa_decide, str(tmp_path / "two.yaml"), str(tmp_path / "one.yaml"))
    assert [x["name"] for x in lines] == [cases[1]["name"], cases[2]["name"], cases[0]["name"]]
    assert [x["desiredReplicas"] for x in lines] == [c["expect"]["desiredReplicas"] for c in cases[1:] + cases[:1]]


def test_hpa_decide_refuses_bad_input_in_one_line(hpa_decide, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "x", "now": "2026-01-01T00:00:00Z", "scale": {},
                               "hpa": {"apiVersion": "pyhpa.dev/v1alpha1", "kind": "HorizontalAutoscaler"}}))
    res = subprocess.run([hpa_decide, str(bad)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.count("\n") == 1 and "autoscaling/v2 HorizontalPodAutoscaler" in res.stderr, res.stderr


def test_gate_defaults_are_upstreams(hpa_decide):
    """Every gate upstream's controller reads (recorded during a probe sync) defaults in pyhpa as in v1.37.2:
    a gate pyhpa models (a ``controller.featureGates`` key) through ControllerConfig's default, one it does not
    model through the value pyhpa behaves as (``UPSTREAM_ONLY_GATES``)."""
    table = _decide(hpa_decide, "--gates")[0]
    assert table["kubernetesVersion"] == "v1.37.2" and table["emulationVersion"] == "1.37"
    upstream = {g["name"]: g["default"] for g in table["gates"]}
    assert {"HPAScaleToZero", "HPAConfigurableTolerance", "PodLevelResources", "HPAGeneration"} <= set(upstream)
    config = ControllerConfig()
    modeled = {gate: getattr(config, field) for field, gate in FEATURE_GATES}
    ours = {**UPSTREAM_ONLY_GATES, **modeled}
    assert set(upstream) <= set(ours), f"upstream reads gates pyhpa does not know: {set(upstream) - set(ours)}"
    assert {g: ours[g] for g in upstream} == upstream
    from pyhpa.cli import run_cmd

    assert run_cmd.SCALE_TO_ZERO_OPTION.default is config.scale_to_zero


def test_random_snapshots_decided_as_upstream_decides_them(hpa_decide, tmp_path):
    """A few hundred fresh snapshots of benchmarks/upstream_diff.py, seed = today's date: no disagreement."""
    seed = int(datetime.date.today().strftime("%Y%m%d"))
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "upstream_diff.py"), "--count", "300",
                          "--seed", str(seed), "--out", str(tmp_path / "repros")],
                         capture_output=True, text=True, timeout=1800, cwd=ROOT)
    repros = sorted((tmp_path / "repros").glob("*.json")) if (tmp_path / "repros").is_dir() else []
    detail = "\n".join(json.dumps(json.loads(p.read_text())["differences"])[:600] for p in repros[:5])
    assert res.returncode == 0, f"seed {seed}: {res.stdout.strip()} {res.stderr.strip()[-500:]}\n{detail}"
    line = res.stdout.strip().splitlines()[-1]
    counts = dict(kv.split("=") for kv in line.split())
    assert counts["snapshots"] == "300" and counts["disagree"] == "0"
    assert int(counts["agree"]) + int(counts["platform_defined"]) == 300


# (issue 37) tools/upstream/hpa-decide runs from any python3: it needs the standard library only to find the built
# binary (controlplane.build, which `import controlplane` no longer pulls httpx, PyYAML and cryptography in for).
# Run here by a python without site-packages (-S -I), against a cache folder of our own: no Go, no build.
SCRIPT = ROOT / "tools" / "upstream" / "hpa-decide"


def _bare(cache: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ.get("PATH", ""), "PYHPA_CONTROL_PLANE_CACHE": str(cache), "HOME": str(cache)}
    return subprocess.run([sys.executable, "-S", "-I", str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=60, env=env, cwd=cache)


def test_hpa_decide_without_a_binary_says_how_to_build_it_in_one_line(tmp_path):
    r = _bare(tmp_path, "--gates")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == (f"error: {tmp_path / 'bin' / 'hpa-decide'}: hpa-decide is not built: run python -m "
                        "controlplane build (in pyhpa's environment, pip install -e '.[test]'; it needs Go 1.26)\n")


@pytest.mark.parametrize("fresh", [True, False], ids=["fresh", "stale"])
def test_hpa_decide_runs_the_built_binary_or_says_it_is_stale(tmp_path, fresh):
    from controlplane.build import source_hash

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "hpa-decide"  # a stand-in for the Go binary: prints its arguments
    exe.write_text('#!/bin/sh\necho "decided $*"\n')
    exe.chmod(0o755)
    (bin_dir / ".stamp-hpa-decide").write_text((source_hash(name="hpa-decide") if fresh else "0" * 16) + "\n")
    r = _bare(tmp_path, "a.json", "--gates")
    if fresh:
        assert (r.returncode, r.stdout, r.stderr) == (0, "decided a.json --gates\n", "")
    else:
        assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr
        assert r.stderr == (f"error: {exe}: hpa-decide was built from older sources than tools/kube: run python -m "
                            "controlplane build (in pyhpa's environment, pip install -e '.[test]'; it needs Go 1.26)\n")


def test_importing_controlplane_needs_the_standard_library_only():
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import controlplane; "
            "print(controlplane.bin_dir().name, sorted(m for m in ('httpx2', 'yaml', 'cryptography') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-S", "-I", "-c", code, str(ROOT)], capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout, r.stderr) == (0, "bin []\n", "")
    import controlplane

    assert controlplane.ControlPlane.__module__ == "controlplane.cluster"  # still there, on first use


QUANTITY_SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e3", "e-3",
                     "E2", "e0", "e-12", "e21", "e100", "e+5", "i", "x", "K", "mi"]
QUANTITY_EDGES = ["0", "1000", "1024Mi", "1536Mi", "1.5Gi", "0.5Ki", ".001Ki", "100m", "1e3", "+1", "-0", "0.0", ".",
                  "9223372036854775807", "9223372036854775808", "-9223372036854775808", "8Ei", "9Ei", "1000E",
                  "0.0000000001", "-0.0000000001", "1n", "0.1n", "999999999999999999999999m", "1.", "1..2", "", " 1",
                  "1 ", "1\n", "١", "1e", "1e-", "5e-324", "123456789012345678901234567890Ki"]


def _random_quantity(rng) -> str:
    whole = "".join(rng.choice("0123456789") for _ in range(rng.choice([0, 1, 1, 2, 3, 4, 6, 10, 18, 19, 25])))
    number = whole or "0"
    if rng.random() >= 0.4:
        number = f"{whole}." + "".join(rng.choice("0123456789") for _ in range(rng.choice([0, 1, 2, 3, 5, 9, 12, 20])))
    return rng.choice(["", "", "", "-", "+"]) + number + rng.choice(QUANTITY_SUFFIXES)


def test_the_quantity_ports_agree_with_apimachinery_on_random_texts(hpa_decide):
    """pyhpa's ports of apimachinery's ParseQuantity with MilliValue (``go_milli_value``, what ``milli`` decides with)
    and with String (``go_quantity_text``, what ``kubectl get horizontalautoscalers`` shows) against apimachinery
    v0.37.2 itself (``hpa-decide --quantities``) on 3,000 edge-biased random texts, seed = today's date."""
    import random

    from pyhpa.adapters.parse import go_milli_value, go_quantity_text

    seed = int(datetime.date.today().strftime("%Y%m%d"))
    rng = random.Random(seed)
    texts = QUANTITY_EDGES + [_random_quantity(rng) for _ in range(3000)]
    res = subprocess.run([hpa_decide, "--quantities"], input="".join(json.dumps(t) + "\n" for t in texts),
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    lines = [json.loads(line) for line in res.stdout.splitlines()]
    assert [line["in"] for line in lines] == texts
    differ = [(line, go_quantity_text(line["in"]), go_milli_value(line["in"])) for line in lines
              if (go_quantity_text(line["in"]), go_milli_value(line["in"])) != (line.get("string"), line.get("milli"))]
    assert differ == [], f"seed {seed}: {len(differ)} differ, e.g. {differ[:5]}"
    assert sum("error" in line for line in lines) > 100 and sum("error" not in line for line in lines) > 1000


# (issue 38) the fleet's scheduler is a port of kube-scheduler v1.37.2's NodeResourcesFit: checked against the
# plugin itself (``hpa-decide --sched-fit``: NewFit, PreFilter, Filter, PreScore, Score) on random pods and nodes.

CPU_TEXTS = ["0", "1m", "100m", "250m", "500m", "1", "1.5", "2", "4", "0.3", "1n", "999m", "3500m", "16"]
MEMORY_TEXTS = ["0", "1", "0.5", "64Mi", "128Mi", "200Mi", "256M", "1Gi", "1.5Gi", "2G", "4Gi", "1e9", "100k", "3Gi"]


def _random_requests(rng, texts) -> dict:
    return {r: rng.choice(t) for r, t in (("cpu", texts[0]), ("memory", texts[1])) if rng.random() < 0.75}


def _random_container(rng, name: str, init: bool = False) -> dict:
    c: dict = {"name": name, "image": "x"}
    if rng.random() < 0.85:
        c["resources"] = {"requests": _random_requests(rng, (CPU_TEXTS, MEMORY_TEXTS))}
    if init and rng.random() < 0.4:
        c["restartPolicy"] = "Always"  # a sidecar
    return c


def _random_pod_spec(rng) -> dict:
    spec: dict = {"containers": [_random_container(rng, f"c{i}") for i in range(rng.choice([1, 1, 2, 3]))]}
    if rng.random() < 0.3:
        spec["initContainers"] = [_random_container(rng, f"i{i}", init=True) for i in range(rng.choice([1, 2, 3]))]
    if rng.random() < 0.15:
        spec["resources"] = {"requests": _random_requests(rng, (CPU_TEXTS, MEMORY_TEXTS))}
    if rng.random() < 0.1:
        spec["overhead"] = _random_requests(rng, (["10m", "250m"], ["64Mi", "120Mi"]))
    return spec


def _random_node(rng, name: str) -> dict:
    allocatable = {"cpu": rng.choice(["0", "1", "2", "3900m", "4", "8", "16", "64"]),
                   "memory": rng.choice(["0", "1Gi", "3.5Gi", "4Gi", "15Gi", "16Gi", "64Gi"]),
                   "pods": str(rng.choice([1, 2, 3, 4, 110]))}
    return {"name": name, "allocatable": allocatable,
            "pods": [_random_pod_spec(rng) for _ in range(rng.choice([0, 0, 1, 2, 3, 5]))]}


def test_the_fleet_scheduler_agrees_with_kube_schedulers_node_resources_fit(hpa_decide):
    """``pyhpa.fleet.scheduler`` (pod_requests, fits, score) against kube-scheduler v1.37.2's NodeResourcesFit on
    1,500 random cases (a pod of 1-3 containers, init containers and sidecars, pod-level requests, overhead,
    requests missing; 1-4 nodes with 0-5 pods and allocatable cpu, memory or pods as low as none), LeastAllocated
    and MostAllocated, seed = today's date: the same requests, the same nodes refused with the same reasons, the
    same scores."""
    import random

    from pyhpa.adapters.parse import milli, quantity
    from pyhpa.fleet.scheduler import Node, ScoringStrategy, fits, pod_requests, score

    seed = int(datetime.date.today().strftime("%Y%m%d"))
    rng = random.Random(seed)
    cases = [{"strategy": rng.choice(["LeastAllocated", "MostAllocated"]), "pod": _random_pod_spec(rng),
              "nodes": [_random_node(rng, f"n{j}") for j in range(rng.choice([1, 2, 4]))]} for _ in range(1500)]
    res = subprocess.run([hpa_decide, "--sched-fit"], input="".join(json.dumps(c) + "\n" for c in cases),
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    lines = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(lines) == len(cases) and not any("error" in line for line in lines)
    differ = []
    refused = scored = 0
    for case, go in zip(cases, lines):
        pod = pod_requests(case["pod"])
        ours = {"cpu": pod.cpu, "memory": pod.memory, "nodes": []}
        for n in case["nodes"]:
            a = n["allocatable"]
            node = Node(n["name"], milli(a["cpu"]), int(quantity(a["memory"])), int(a["pods"]))
            for spec in n["pods"]:
                node.add(pod_requests(spec))
            reasons = fits(node, pod)
            line = {"name": n["name"], "fits": not reasons, "score": score(node, pod, ScoringStrategy(case["strategy"]))}
            if reasons:
                line["reasons"] = list(reasons)
            ours["nodes"].append(line)
            refused += bool(reasons)
            scored += 0 < line["score"] < 100
        if ours != go:
            differ.append((case, go, ours))
    assert differ == [], f"seed {seed}: {len(differ)} differ, e.g. {differ[:2]}"
    assert refused > 300 and scored > 1000  # both outcomes and non-trivial scores are exercised
