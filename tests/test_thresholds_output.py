"""``pyhpa thresholds`` fast on many metrics with the same output (issue 37): the core's search from a guess finds
the bounds bisection from 0 finds; rich's ``Table`` given a column's rows as one cell prints what it prints for
one cell a row, on pipes and terminals of any width, with and without colour; and titles and cells are printed
as written (``[`` and ``:`` in a metric name or selector are not console markup or emoji codes)."""

from __future__ import annotations

import io

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from typer.testing import CliRunner

import pyhpa.cli.thresholds_cmd as thresholds_cmd
import pyhpa.core.thresholds as thresholds_mod
from pyhpa.cli.main import app
from pyhpa.cli.thresholds_cmd import HEADERS, thresholds_table
from pyhpa.core.model import MAX_INT32, MetricSpec
from pyhpa.core.thresholds import Threshold, proposal, thresholds

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
    # height given: rich's width then does not hang on $LINES (a legacy Windows console keeps its last column free
    # when both are known)
    console = Console(file=out, width=width, height=50, force_terminal=terminal,
                      color_system=color if terminal else None, soft_wrap=soft_wrap, highlight=False,
                      legacy_windows=legacy_windows)
    console.print(renderable)
    return out.getvalue()


def row_per_row(title: str, rows) -> Table:
    """The same table as rich's ``Table`` holds it most plainly: one row a row, every cell a ``Text``, the title
    a ``str`` (rich prints it in its "table.title" style) with ``[`` escaped."""
    table = Table(title=escape(title), title_justify="left")
    for header in HEADERS:
        table.add_column(header, justify="right")
    for row in rows:
        table.add_row(*map(Text, row))
    return table


#: what a cell of pyhpa thresholds is: one word (a number, a quantity, "-", "..." or "")
CELLS = st.one_of(st.integers(0, 2 ** 40).map(str), st.sampled_from(
    ["-", "...", "", "330Mi", "250m", "25.7", "12%", "1.5Gi", "99999999999%", "[bold]x[/]", ":smile:", "é", "日本"]))
TITLES = st.sampled_from([
    "cpu resource utilization (percentage of request) (target 50%)",
    "external metric queue_0(&LabelSelector{MatchLabels:map[string]string{queue: q0,},MatchExpressions:[]"
    "LabelSelectorRequirement{},}) (target 30)",
    "pods metric rps (target 1.5)", "[bold]markup[/bold] title", "Ingress metric hits[/] (target 2k)", "", "x" * 300])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(title=TITLES, rows=st.lists(st.tuples(*[CELLS] * 5), max_size=12),
       width=st.sampled_from([18, 19, 20, 24, 30, 40, 60, 72, 75, 80, 100, 132, 400]), terminal=st.booleans(),
       color=st.sampled_from(["standard", "256", "truecolor"]), soft_wrap=st.booleans(), ascii_only=st.booleans(),
       legacy_windows=st.booleans())
def test_a_thresholds_table_prints_as_richs_table_of_one_row_a_row(title, rows, width, terminal, color, soft_wrap,
                                                                     ascii_only, legacy_windows):
    """One multi-line cell a column is what rich prints for one cell a row, on terminals and pipes as narrow as
    18 columns (where rich cuts cells with "…" and wraps headers), with and without colour and box characters.
    (With room for 16 columns or fewer (17 on a legacy Windows console, which keeps its last column free), the 6
    borders and 10 spaces of padding leave none for any character of a cell: rich prints each column as one blank
    line there, instead of one a row.)"""
    args = (width, terminal, color, soft_wrap, ascii_only, legacy_windows)
    assert render(thresholds_table(title, rows), *args) == render(row_per_row(title, rows), *args)


def test_a_thresholds_table_is_one_cell_a_column():
    """The rows reach rich as one cell a column (rich lays out 5 cells, not 5 a row)."""
    rows = [(str(n), str(n * 33), str(n + 1), str(n * 30), str(n - 1)) for n in range(1, 11)]
    table = thresholds_table("t", rows)
    assert table.row_count == 1 and [len(list(c.cells)) for c in table.columns] == [1] * 5
    assert [next(iter(c.cells)).plain.split("\n") for c in table.columns] == [list(col) for col in zip(*rows)]


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
    monkeypatch.setattr(thresholds_cmd, "thresholds_table", row_per_row)
    assert runner.invoke(app, ["thresholds", str(path)]).output == fast.output


def test_names_and_selectors_are_printed_as_written(tmp_path):
    """A metric name or selector holding ``[...]`` or ``:name:`` is printed whole: before, rich read them as
    console markup and emoji codes (``map[string]string`` printed ``mapstring``, ``Values:[a b]`` printed
    ``Values:``, ``:smile:`` an emoji, and ``hits[/]`` stopped the command with a traceback)."""
    doc = hpa(1, 1, 3)
    doc["spec"]["metrics"] = [
        {"type": "External", "external": {"metric": {"name": "queue[0]:smile:", "selector": {"matchExpressions": [
            {"key": "topic", "operator": "In", "values": ["a", "b"]}]}},
            "target": {"type": "AverageValue", "averageValue": "30"}}},
        {"type": "Pods", "pods": {"metric": {"name": "[bold]rps[/bold]"},
                                  "target": {"type": "AverageValue", "averageValue": "1500m"}}},
        {"type": "Object", "object": {"metric": {"name": "hits[/]"}, "describedObject": {
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
            "target": {"type": "Value", "value": "2k"}}},
    ]
    path = tmp_path / "hpa.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = runner.invoke(app, ["thresholds", str(path)], terminal_width=400)
    assert result.exit_code == 0, result.output
    titles = [line for line in result.output.splitlines() if "(target " in line]
    assert titles == [
        "external metric queue[0]:smile:(&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:"
        "[]LabelSelectorRequirement{LabelSelectorRequirement{Key:topic,Operator:In,Values:[a b],},},}) (target 30)",
        "pods metric [bold]rps[/bold] (target 1.5)",
        "Ingress metric hits[/] (target 2000)",
    ]
