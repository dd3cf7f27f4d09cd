"""The plots and the summary table of ``pyhpa simulate`` as a reader sees them: nothing cut off, names and units a
user knows, legends that hide no curve, and the two CPU figures told apart."""

from __future__ import annotations

import re

import matplotlib.pyplot as plt
import pytest
from rich.console import Console

from pyhpa.simulate.plot import compare_figure, run_figure
from pyhpa.simulate.report import summary_table
from simulate_util import hpa_doc, simulate

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
        cap = run.cluster.column("ready_capacity")
        capacity = max(r[cap] for r in run.cluster.rows if r[cap] is not None)
        load = max(r[1] for r in run.cluster.rows)
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
        labels = [ax.get_ylabel() for ax in fig.axes[2:]]
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
