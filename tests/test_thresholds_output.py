"""``pyhpa thresholds`` fast on many metrics with the same output (issue 37): the core's search from a guess finds
the bounds bisection from 0 finds, and the tables pyhpa lays out itself (``pyhpa.cli.tables``) are byte for byte
those of rich's ``Table``, on pipes and terminals of any width, with and without colour."""

from __future__ import annotations

import io

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from typer.testing import CliRunner

import pyhpa.cli.tables as tables_mod
import pyhpa.core.thresholds as thresholds_mod
from pyhpa.cli.main import app
from pyhpa.cli.tables import PlainTables
from pyhpa.core.calculator import within
from pyhpa.core.model import MAX_INT32, MetricSpec
from pyhpa.core.thresholds import Threshold, proposal, thresholds

HEADERS = ("replicas", "scale up above (>)", "to", "scale down at or below (<=)", "to")
runner = CliRunner()


# ----------------------------------------------------------------------------------------- the core's search
def bisection(spec, min_replicas, max_replicas, down, up, counts):
    """The bounds by bisection over [0, hi] (how pyhpa searched them before): the reference."""
    from pyhpa.core.thresholds import metric_target

    def first_true(lo, hi, pred):
        if not pred(hi):
            return None
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if pred(mid) else (mid + 1, hi)
        return lo

    target, _ = metric_target(spec)
    rows = []
    for r in counts:
        scale = r if spec.type in ("Object", "External") and spec.target_type == "AverageValue" else 1

        def clamp(v, r=r):
            return min(max(proposal(spec, v, r, down, up), min_replicas), max_replicas)

        up_at = first_true(0, int(target * scale * (1.0 + up) * 4) + 4, lambda v, r=r: clamp(v) > r)
        top = int(target * scale) + 1
        first = first_true(0, top, lambda v, r=r: clamp(v) >= r)
        down_at = None if first == 0 else (top if first is None else first - 1)
        rows.append(Threshold(r, up_at, None if up_at is None else clamp(up_at), down_at,
                              None if down_at is None else clamp(down_at)))
    return rows


def spec_of(kind: str, target: int) -> MetricSpec:
    return {
        "cpu": MetricSpec("Resource", "cpu", "Utilization", target),
        "pods": MetricSpec("Pods", "rps", "AverageValue", target_average_milli=target),
        "object": MetricSpec("Object", "hits", "Value", target_value_milli=target),
        "external-avg": MetricSpec("External", "queue", "AverageValue", target_average_milli=target),
        "external-value": MetricSpec("External", "lag", "Value", target_value_milli=target),
    }[kind]


TOLERANCES = st.sampled_from([0.0, 0.1, 0.05, 0.2, 0.5, 0.99, 1e-9]) | st.floats(0, 0.999)


@settings(max_examples=400, deadline=None)
@given(kind=st.sampled_from(["cpu", "pods", "object", "external-avg", "external-value"]),
       target=st.integers(1, 1000) | st.integers(1, 10 ** 6) | st.integers(1, 2 ** 63 - 1) | st.sampled_from(
           [2 ** 53 // 7, 2 ** 53 // 1000 + 1, 2 ** 52, 2 ** 53 - 1, 2 ** 53 + 1]),
       down=TOLERANCES, up=TOLERANCES, low=st.integers(1, 30) | st.integers(1, MAX_INT32),
       span=st.integers(0, 12), at_top=st.booleans())
def test_the_search_from_a_guess_finds_the_bounds_bisection_finds(kind, target, down, up, low, span, at_top):
    """Any target (percent, milli-units up to int64), tolerance and replica counts, up to int32's maximum."""
    spec = spec_of(kind, min(target, 100_000) if kind == "cpu" else target)
    hi = min(MAX_INT32, low + span)
    lo = max(1, hi - span) if at_top else low
    counts = list(range(lo, hi + 1))
    assert thresholds(spec, lo, hi, down, up, counts) == bisection(spec, lo, hi, down, up, counts)


def test_the_search_takes_a_few_proposals_a_row_where_bisection_took_about_forty(monkeypatch):
    calls = []
    real = thresholds_mod.proposal
    monkeypatch.setattr(thresholds_mod, "proposal", lambda *a: calls.append(1) or real(*a))
    for spec in (spec_of("cpu", 50), spec_of("external-avg", 30_000), spec_of("pods", 1_500),
                 spec_of("object", 5_000_000_000)):
        calls.clear()
        rows = thresholds(spec, 1, 10, 0.1, 0.1)
        assert len(rows) == 10 and len(calls) <= 10 * 16, (spec, len(calls))


# ----------------------------------------------------------------------------------------- the tables
class AsciiIO(io.StringIO):
    encoding = "ascii"  # rich draws ASCII boxes on a stream that cannot take the box characters


def render(renderable, width, terminal, color, soft_wrap, ascii_only, legacy_windows) -> str:
    out = AsciiIO() if ascii_only else io.StringIO()
    console = Console(file=out, width=width, force_terminal=terminal, color_system=color if terminal else None,
                      soft_wrap=soft_wrap, highlight=False, legacy_windows=legacy_windows)
    console.print(renderable)
    console.print(renderable)  # twice: the second reuses the rendered borders and header
    return out.getvalue()


PLAIN_CELLS = st.one_of(st.integers(0, 2 ** 40).map(str), st.sampled_from(["-", "...", "", "330Mi", "250m", "25.7",
                                                                           "12%", "1.5Gi", "99999999999%"]))
ODD_CELLS = st.sampled_from(["[bold]x[/]", ":smile:", "a b", "é", "日本", "x\ny", "\t", "[", "back\\slash"])
TITLES = st.sampled_from([
    "cpu resource utilization (percentage of request) (target 50%)",
    "external metric queue_0(&LabelSelector{MatchLabels:mapstring{queue: q0,},MatchExpressions:[]"
    "LabelSelectorRequirement{},}) (target 30)",
    "pods metric rps (target 1.5)", "[bold]markup[/bold] title", "", "x" * 300])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(title=TITLES, rows=st.lists(st.tuples(*[PLAIN_CELLS] * 5), max_size=12),
       odd=st.lists(st.tuples(st.integers(0, 11), st.integers(0, 4), ODD_CELLS), max_size=2),
       width=st.sampled_from([12, 30, 40, 60, 72, 75, 80, 100, 132, 400]), terminal=st.booleans(),
       color=st.sampled_from(["standard", "256", "truecolor"]), soft_wrap=st.booleans(), ascii_only=st.booleans(),
       legacy_windows=st.booleans())
def test_a_plain_table_prints_exactly_as_richs_table(title, rows, odd, width, terminal, color, soft_wrap, ascii_only,
                                                     legacy_windows):
    rows = [list(r) for r in rows]
    for i, j, cell in odd:  # cells rich lays out differently: the table falls back to rich's own Table
        if i < len(rows):
            rows[i][j] = cell
    maker = PlainTables(HEADERS)
    args = (width, terminal, color, soft_wrap, ascii_only, legacy_windows)
    assert render(maker.table(title, rows), *args) == render(maker.rich_table(title, rows), *args)



@pytest.mark.parametrize("terminal", [False, True])
def test_a_table_as_wide_as_the_console_is_laid_out_by_pyhpa_one_column_wider_by_rich(terminal):
    maker = PlainTables(HEADERS)
    rows = [("1", "33", "2", "-", "-"), ("10", "-", "-", "269", "9"), ("...", "", "", "", "")]
    widest = len(render(maker.rich_table("", rows), 400, False, None, True, False, False).splitlines()[0])
    for width in (widest - 1, widest, widest + 1):
        args = (width, terminal, "truecolor", not terminal, False, False)
        assert render(maker.table("a title longer than the table is wide, " * 3, rows), *args) == render(
            maker.rich_table("a title longer than the table is wide, " * 3, rows), *args), width

def test_a_table_that_fits_is_not_laid_out_by_rich(monkeypatch):
    """The fast path is taken (rich's Table lays out the borders and header, never the rows)."""
    maker = PlainTables(HEADERS)
    rows = [(str(n), str(n * 33), str(n + 1), str(n * 30), str(n - 1)) for n in range(1, 11)]
    laid_out = []
    real = tables_mod.Table.add_row
    monkeypatch.setattr(tables_mod.Table, "add_row", lambda self, *cells, **kw: laid_out.append(cells) or real(
        self, *cells, **kw))
    fast = render(maker.table("t", rows), 80, True, "truecolor", False, False, False)
    assert laid_out == []
    assert fast == render(maker.rich_table("t", rows), 80, True, "truecolor", False, False, False)
    assert len(laid_out) == 10  # the reference (made once, printed twice)


# ----------------------------------------------------------------------------------------- the command
def hpa(metrics: int, min_replicas: int, max_replicas: int, status: dict | None = None) -> dict:
    kinds = [
        {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "a"}}},
                                          "target": {"type": "AverageValue", "averageValue": "30"}}},
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
        {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "300Mi"}}},
        {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "1500m"}}},
        {"type": "Object", "object": {"metric": {"name": "hits"}, "describedObject": {
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
            "target": {"type": "Value", "value": "2k"}}},
    ]
    doc = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "web", "namespace": "shop"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "minReplicas": min_replicas, "maxReplicas": max_replicas,
                    "metrics": [kinds[i % len(kinds)] for i in range(metrics)]}}
    if status:
        doc["status"] = status
    return doc


@pytest.mark.parametrize("metrics, low, high, status", [
    (1000, 1, 10, None),  # the reported HPA: 1,000 metrics, 15,001 lines
    (25, 2, 500, {"currentReplicas": 250, "desiredReplicas": 260}),  # rows elided, "..." lines
    (5, 1, MAX_INT32, None),
])
def test_pyhpa_thresholds_prints_what_richs_tables_print(tmp_path, monkeypatch, metrics, low, high, status):
    path = tmp_path / "hpa.yaml"
    path.write_text(yaml.safe_dump(hpa(metrics, low, high, status)))
    fast = runner.invoke(app, ["thresholds", str(path)])
    assert fast.exit_code == 0, fast.output
    if metrics == 1000:
        assert len(fast.output.splitlines()) == 15_001
    monkeypatch.setattr(PlainTables, "table", PlainTables.rich_table)
    assert runner.invoke(app, ["thresholds", str(path)]).output == fast.output
