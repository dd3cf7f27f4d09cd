"""The plots and the summary table of ``pyhpa simulate`` as a reader sees them: nothing cut off, names and units a
user knows, legends that hide no curve, and the two CPU figures told apart."""

from __future__ import annotations

import re

import matplotlib.pyplot as plt
import pytest
from rich.console import Console
from simulate_util import hpa_doc, simulate

from pyhpa.simulate.plot import compare_figure, run_figure
from pyhpa.simulate.report import summary_table

# 1 req/s per pod is 100 % of a 100m request; with 50 % the HPA keeps about 2 pods per req/s of load
STEPS = [(900, 2.0), (1800, 12.0), (900, 1.0)]
MEMORY_PODS = {"type": "Pods", "pods": {"metric": {"name": "http_requests_per_second"},
                                         "target": {"type": "AverageValue", "averageValue": "1"}}}


@pytest.fixture
def sim(tmp_path):
    return simulate(tmp_path, STEPS, hpas=[hpa_doc(max_replicas=40),
                                           hpa_doc(max_replicas=40, metrics=[MEMORY_PODS])],
                    profile={"metrics": {"http_requests_per_second": {"source": "served_requests_per_second"}}})


def _legend_texts(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_the_load_panel_shows_the_whole_ready_capacity(sim):
    run = sim.runs[0]
    fig = run_figure(run.cluster, sim.trace, run.label)
    try:
        top = fig.axes[0]
        tl = run.cluster.timeline
        capacity = max(v for v in tl.column("ready_capacity") if v is not None)
        load = max(tl.column("load"))
        assert capacity > 2.5 * load  # the case the old axis cut off (it stopped at 2.5 x the peak load)
        assert top.get_ylim()[1] >= capacity
    finally:
        plt.close(fig)


def test_run_legends_and_axes_use_the_users_names_and_units(sim):
    run = sim.runs[0]
    fig = run_figure(run.cluster, sim.trace, run.label)
    try:
        metric = fig.axes[2]
        texts = " ".join(_legend_texts(metric))
        assert "CPU utilization, as the HPA sees it" in texts.replace("\n", " ")
        assert not re.search(r"\w+_\w+_percent|_millicores|_mebibytes", texts)  # no timeline column names
        assert "% of request" in metric.get_ylabel()
    finally:
        plt.close(fig)


def test_compare_legend_is_outside_the_curves_and_the_metric_axes_have_units(sim):
    fig = compare_figure(sim)
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        for ax in fig.axes:
            legend = ax.get_legend().get_window_extent(renderer)
            assert legend.x0 >= ax.get_window_extent(renderer).x1  # right of the plotting area: hides nothing
        labels = [ax.get_ylabel() for ax in fig.axes[3:]]  # after load, overloaded and replicas
        assert len(labels) == 2  # % of request and the Pods metric's own unit: never one axis for both
        assert any("% of request" in label for label in labels)
        assert all("(" in label and ")" in label for label in labels)  # every metric axis names its unit
        texts = " ".join(t for ax in fig.axes for t in _legend_texts(ax)).replace("\n", " ")
        assert "http_requests_per_second per pod, HPA's view" in texts and "cpu_utilization_percent" not in texts
    finally:
        plt.close(fig)


def test_the_summary_table_tells_true_cpu_from_the_hpas_view(sim):
    console = Console(width=200, record=True)
    console.print(summary_table(sim))
    text = console.export_text()
    true_row = next(line for line in text.splitlines() if "CPU use, true" in line)
    view_row = next(line for line in text.splitlines() if "as the HPA sees it" in line)
    assert "all running pods" in true_row and "/ 50 % of request" in view_row


# ----------------------------------------------------------------------------------- what the plots show (issue 29)
def _overloaded(tmp_path, **kw):
    """One HPA that cannot keep up at first (maxReplicas 3 against a load 12 pods serve) and one that can, on a
    trace with a zero-load hour."""
    steps = [(3600, 2.0), (600, 30.0), (3600, 0.0), (3600, 2.0)]
    return simulate(tmp_path, steps, hpas=[hpa_doc(max_replicas=3), hpa_doc(max_replicas=400)],
                    profile={"pod_capacity_rps": 5}, **kw)


def _span_widths(ax, color):
    from matplotlib.colors import to_rgba

    out = []
    for p in ax.patches:  # axvspan: a Rectangle in data x
        if to_rgba(p.get_facecolor())[:3] == to_rgba(color)[:3]:
            out.append(p.get_width())
    return out


def test_every_overload_episode_shows_and_the_legend_gives_its_seconds(tmp_path):
    from pyhpa.simulate.plot import MIN_SPAN

    sim = _overloaded(tmp_path)
    run = sim.runs[0]
    s = run.cluster.stats
    assert s.episodes and s.overloaded_seconds > 0
    fig = run_figure(run.cluster, sim.trace, run.label)
    try:
        load = fig.axes[0]
        widths = _span_widths(load, "tab:red")
        lo, hi = load.get_xlim()
        assert widths and min(widths) >= MIN_SPAN * (hi - lo) * 0.99  # never thinner than a pixel or two
        text = " ".join(_legend_texts(load)).replace("\n", " ")
        assert f"overloaded: {s.overloaded_seconds:,.0f} s in {len(s.episodes)} episode" in text
    finally:
        plt.close(fig)


def test_zero_load_hours_are_marked_on_every_panel(tmp_path):
    from pyhpa.simulate.plot import zero_load_spans

    sim = _overloaded(tmp_path)
    run = sim.runs[1]
    from simulate_util import T0

    assert zero_load_spans(run.cluster) == [(T0 + 4200, T0 + 7800)]
    fig = run_figure(run.cluster, sim.trace, run.label)
    try:
        assert all(_span_widths(ax, "0.55") for ax in fig.axes)
        assert "no load in the trace (0 requests/s)" in " ".join(_legend_texts(fig.axes[0])).replace("\n", " ")
    finally:
        plt.close(fig)


def test_compare_shows_the_outcome_that_differs(tmp_path):
    sim = _overloaded(tmp_path)
    fig = compare_figure(sim)
    try:
        outcome = fig.axes[1]
        assert outcome.get_ylabel() == "overloaded"
        assert [t.get_text() for t in outcome.get_yticklabels()] == [r.label for r in sim.runs]
        texts = [t.replace("\n", " ") for t in _legend_texts(outcome)]
        for run, text in zip(sim.runs, texts):
            s = run.summary
            assert text.startswith(f"{run.label}: overloaded {100 * s['overloaded_fraction']:.2f} % of the time "
                                   f"({s['overloaded_seconds']:,.0f} s);")
            assert f"{s['unserved_requests']:,.0f} requests unserved" in text and f"{s['pod_hours']:,.1f} pod-hours" in text
        assert sim.runs[0].summary["overloaded_fraction"] > 10 * sim.runs[1].summary["overloaded_fraction"]
        load_texts = " ".join(_legend_texts(fig.axes[0]))
        assert all(f"{r.label}: Ready capacity" in load_texts for r in sim.runs)  # each run's capacity under the load
    finally:
        plt.close(fig)


def test_a_bound_above_the_axis_is_said_in_the_legend(tmp_path):
    sim = _overloaded(tmp_path)
    run = sim.runs[1]  # maxReplicas 400, never near it
    fig = run_figure(run.cluster, sim.trace, run.label)
    try:
        replicas = fig.axes[1]
        assert replicas.get_ylim()[1] < 400
        assert "min/max (1/400) (max above the axis)" in " ".join(_legend_texts(replicas)).replace("\n", " ")
    finally:
        plt.close(fig)


def test_a_load_far_below_its_capacity_gets_a_log_axis_and_is_not_squeezed(tmp_path):
    sim = simulate(tmp_path, [(3600, 0.5), (1800, 1.0)], hpas=[hpa_doc(min_replicas=20, max_replicas=40)],
                   profile={"pod_capacity_rps": 5})
    run = sim.runs[0]
    fig = run_figure(run.cluster, sim.trace, run.label)
    try:
        load = fig.axes[0]
        assert load.get_yscale() == "log" and "log scale" in load.get_ylabel()
        lo, hi = load.get_ylim()
        peak = max(run.cluster.timeline.column("load"))
        cap = max(run.cluster.timeline.column("ready_capacity"))
        assert hi >= cap  # nothing cut off
        import math

        assert (math.log(peak) - math.log(lo)) / (math.log(hi) - math.log(lo)) > 0.2  # not pressed to the bottom
    finally:
        plt.close(fig)


def test_the_forecast_band_is_drawn_over_the_actual_rows_and_misses_are_marked():
    from datetime import timezone

    import numpy as np

    from pyhpa.forecast.model import Accuracy
    from pyhpa.forecast.replay import Replay
    from pyhpa.simulate.forecast_plot import replay_figure

    n = 200
    t = 1e9 + 60.0 * np.arange(n)
    actual = 10 + np.sin(np.arange(n) / 10.0) * 3
    actual[::20] += 10  # every 20th row above the band
    point = 10 + np.sin(np.arange(n) / 10.0) * 3
    r = Replay(t, actual, point, point - 2, point + 2, point + 2.5, ["Predicting"] * n, (86400.0,), "m", 1,
               Accuracy(evaluations=n, mape=0.1, wape=0.1, under_share=0.05), 60.0)
    fig = replay_figure(r, title="t", unit="u", tz=timezone.utc, quantile=0.9, lead=300)
    try:
        ax = fig.axes[0]
        band = next(c for c in ax.collections if "forecast band" in c.get_label())
        actual_line = next(line for line in ax.get_lines() if line.get_label() == "actual")
        assert band.get_zorder() > actual_line.get_zorder()  # the band is not buried under the noisy rows
        misses = next(line for line in ax.get_lines() if line.get_label().startswith("actual above the band"))
        assert len(misses.get_xdata()) == 10
    finally:
        plt.close(fig)

