"""Issue 38: what ``pyhpa fleet simulate`` shows — the plots and ``report.html``, one self-contained page (no
network: its styles, script and plots are inside it) that a real browser (Debian's chromium, headless) opens: the
figures of summary.json, the plots drawn, the workload table sorted as asked."""

from __future__ import annotations

import html
import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_fleet_run import SMALL, _step_trace, _write, workloads_on
from typer.testing import CliRunner

from pyhpa.cli.main import app

CHROMIUM = shutil.which("chromium")
#: Chromium's flags for a closed network (no background connections) as root in a test
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """Three workloads of different loads on a pool too small for them (3 nodes at most): some drop requests."""
    tmp = tmp_path_factory.mktemp("fleet")
    trace = _step_trace(tmp, 2, 60, minutes=(30, 90, 60))
    path = _write(tmp, {"nodePools": [{"name": "p", "instanceTypes": [SMALL], "minNodes": 1, "maxNodes": 3}],
                        "workloads": workloads_on(trace, (0.5, 1.0, 2.0))})
    out = tmp / "out"
    r = CliRunner().invoke(app, ["fleet", "simulate", str(path), "--output-dir", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    return out


def test_the_plots_and_the_report_are_written(report):
    for name in ("nodes.png", "cpu.png", "pending.png", "overload.png", "worst.png"):
        assert (report / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (report / "report.html").read_text()
    # self-contained: every image is data, no stylesheet, script or frame is fetched
    assert re.findall(r'<img [^>]*src="([^"]{0,5})', page) == ["data:"] * 5
    assert not re.search(r"<(link|iframe)\b|@import|url\(|<script[^>]+src=", page)
    assert not re.search(r'\b(src|href)="(?!data:)', page)
    summary = json.loads((report / "summary.json").read_text())
    assert f"{summary['fleet']['cost']:,.2f}" in page


def test_the_report_is_titled_by_the_fleets_metadata_name_and_names_its_file(report):
    """Issue 60: the title was the file's name, not the fleet's ``metadata.name`` (here "t", in fleet.yaml)."""
    page = (report / "report.html").read_text()
    assert "<title>pyhpa fleet: t</title>" in page
    assert "<h1>Fleet t</h1>" in page
    assert "<p class=note>fleet.yaml: 3 workloads," in page


def test_a_fleet_without_a_name_is_titled_by_its_file_and_a_name_past_253_characters_is_refused(tmp_path):
    trace = _step_trace(tmp_path, 2, 60, minutes=(30,))
    path = _write(tmp_path, {"nodePools": [{"name": "p", "instanceTypes": [SMALL], "minNodes": 1, "maxNodes": 3}],
                             "workloads": workloads_on(trace, (0.5,))})
    doc = path.read_text().replace("name: t\n", f"name: {'n' * 254}\n", 1)
    assert doc != path.read_text()
    path.write_text(doc)
    r = CliRunner().invoke(app, ["fleet", "simulate", str(path), "--output-dir", str(tmp_path / "o"), "--no-progress"])
    assert r.exit_code == 2, r.output
    assert "metadata.name" in r.output and "fleet.yaml" in r.output and "Traceback" not in r.output
    path.write_text(doc.replace(f"metadata:\n  name: {'n' * 254}\n", ""))
    assert "metadata" not in path.read_text()
    r = CliRunner().invoke(app, ["fleet", "simulate", str(path), "--output-dir", str(tmp_path / "o"), "--no-progress"])
    assert r.exit_code == 0, r.output
    page = (tmp_path / "o" / "report.html").read_text()
    assert "<title>pyhpa fleet: fleet.yaml</title>" in page and "<h1>Fleet fleet.yaml</h1>" in page


def _dom(page: Path, fragment: str, tmp_path: Path) -> str:
    """The DOM Debian's chromium (headless) shows of ``page`` opened at ``#fragment``, after its scripts ran."""
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (.ci/run installs Debian's chromium)")
        pytest.skip("Debian's chromium is not installed here (.ci/run installs it)")
    url = page.resolve().as_uri() + "#" + fragment
    res = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000",
                          "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "</html>" in res.stdout, res.stderr[-2000:]
    return res.stdout


def test_a_browser_shows_the_report_with_its_plots_and_sorts_the_table(report, tmp_path):
    dom = _dom(report / "report.html", "sort=unserved_percent:desc", tmp_path)
    # the page's script ran: the table is sorted by unserved share, largest first, and says so
    assert re.search(r'<table id="workloads"[^>]*data-sorted-by="unserved_percent:desc"', dom)
    summary = json.loads((report / "summary.json").read_text())
    expect = [w["label"] for w in sorted(summary["workloads"], key=lambda w: -w["unserved_fraction"])]
    body = dom.split('<table id="workloads"', 1)[1].split("</table>", 1)[0]
    shown = [html.unescape(m) for m in re.findall(r'<td data-key="workload"[^>]*>([^<]*)</td>', body)]
    assert shown == expect and len(set(w["unserved_fraction"] for w in summary["workloads"])) == 3
    # the numbers are summary.json's, and every plot was decoded and shown
    for w in summary["workloads"]:
        assert f'data-value="{w["unserved_requests"]}"' in body
    assert 'data-images-shown="5/5"' in dom


def test_overload_over_time_adds_up_to_the_workloads_figures(tmp_path):
    """overload.png's figures (``overload_by_minute``) come from each workload's own record: per pool, the overloaded
    workloads per minute add up to the workloads' overloaded seconds (over 60) and the unserved requests per minute
    to theirs, spread over the minutes they happened in."""
    from pyhpa.fleet.engine import FleetRun
    from pyhpa.fleet.plots import overload_by_minute
    from pyhpa.fleet.spec import load_fleet
    from pyhpa.simulate import Settings

    trace = _step_trace(tmp_path, 2, 60, minutes=(30, 90, 60))
    path = _write(tmp_path, {"nodePools": [{"name": "p", "instanceTypes": [SMALL], "minNodes": 1, "maxNodes": 3},
                                           {"name": "q", "instanceTypes": [SMALL], "minNodes": 1, "maxNodes": 2,
                                            "labels": {"pool": "q"}}],
                             "workloads": [*({**w, "nodePool": "p"} for w in workloads_on(trace, (0.5, 2.0))),
                                           *({**w, "name": f"q-{w['name']}", "nodePool": "q"}
                                             for w in workloads_on(trace, (1.0,)))]})
    run = FleetRun(load_fleet(path, Settings(seed=1)), Settings(seed=1)).run()
    by_pool = overload_by_minute(run)
    assert sorted(by_pool) == ["p", "q"]
    for name, (over, unserved) in by_pool.items():
        clusters = [run.clusters[i] for i in run.pools[name].workloads]
        assert len(over) == len(unserved) == math.ceil((run.end - run.start) / 60)
        assert sum(over) * 60 == pytest.approx(sum(c.stats.overloaded_seconds for c in clusters), rel=1e-9, abs=1e-6)
        assert sum(unserved) == pytest.approx(sum(c.stats.unserved_requests for c in clusters), rel=1e-9, abs=1e-6)
        assert max(over) <= len(clusters) + 1e-9 and min(over) >= 0
    # the pool too small for its two workloads drops requests in more than one minute, not all of them at once
    over, unserved = by_pool["p"]
    assert sum(1 for v in unserved if v > 0) > 1 and sum(1 for v in over if v > 0) > 1


@pytest.fixture(scope="module")
def comparison(tmp_path_factory) -> Path:
    """The fleet of ``report`` beside itself under Karpenter (``--what-if nodeAutoscaler=karpenter``)."""
    tmp = tmp_path_factory.mktemp("compare")
    trace = _step_trace(tmp, 2, 60, minutes=(30, 90, 60))
    path = _write(tmp, {"nodePools": [{"name": "p", "instanceTypes": [SMALL], "minNodes": 1, "maxNodes": 3}],
                        "workloads": workloads_on(trace, (0.5, 1.0, 2.0))})
    out = tmp / "out"
    r = CliRunner().invoke(app, ["fleet", "simulate", str(path), "--what-if", "nodeAutoscaler=karpenter",
                                 "--output-dir", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    assert str(out / "report.html") in r.output
    return out


def test_a_comparison_writes_a_report_of_the_two_with_compare_csv_s_figures(comparison):
    """Issue 60: a what-if (and fleet tune) wrote only compare.png; now report.html of the two beside it: what each
    side is with a link to its own report, the totals of both and the change, compare.png inside the page, and the
    workload table of compare.csv, self-contained as the fleet's own report."""
    import csv

    page = (comparison / "report.html").read_text()
    assert "<title>pyhpa fleet: t: a against b</title>" in page
    assert "fleet.yaml with nodeAutoscaler=karpenter" in page
    links = re.findall(r'href="([^"]+)"', page)
    assert links == ["a/report.html", "b/report.html"] and all((comparison / link).is_file() for link in links)
    assert re.findall(r'<img [^>]*src="([^"]{0,5})', page) == ["data:"]
    assert not re.search(r"<(link|iframe)\b|@import|url\(|<script[^>]+src=", page)
    rows = list(csv.DictReader((comparison / "compare.csv").open()))
    total = rows.pop()
    assert total["workload"] == "total" and len(rows) == 3
    body = page.split("<table id=workloads>", 1)[1].split("</table>", 1)[0]
    for row in rows:
        line = next(tr for tr in body.split("<tr>") if f'data-value="{row["workload"]}"' in tr)
        for key in ("cost_a", "cost_b", "cost_change", "unserved_requests_b", "node_wait_seconds_a", "pod_hours_b"):
            assert f'<td data-key="{key}" data-value="{row[key]}"' in line, (key, row[key])
    totals = page.split("<table id=totals>", 1)[1].split("</table>", 1)[0]
    cost = next(tr for tr in totals.split("<tr") if 'data-key="cost"' in tr)
    a, b = float(total["cost_a"]), float(total["cost_b"])
    assert f"<td>{a:,.2f}</td><td>{b:,.2f}</td>" in cost
    embedded = json.loads(re.search(r"<script type=application/json id=compare>(.*?)</script>", page).group(1))
    assert embedded["total"]["cost"] == {"a": a, "b": b, "change": round(b - a, 4)}


def test_a_comparison_without_plots_writes_no_report(tmp_path):
    trace = _step_trace(tmp_path, 2, 60, minutes=(30,))
    path = _write(tmp_path, {"nodePools": [{"name": "p", "instanceTypes": [SMALL], "minNodes": 1, "maxNodes": 3}],
                             "workloads": workloads_on(trace, (0.5,))})
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["fleet", "simulate", str(path), "--what-if", "nodeAutoscaler=karpenter",
                                 "--output-dir", str(out), "--no-progress", "--no-plot"])
    assert r.exit_code == 0, r.output
    assert (out / "compare.csv").is_file() and not (out / "report.html").exists()


def test_a_browser_shows_the_comparison_and_sorts_it(comparison, tmp_path):
    dom = _dom(comparison / "report.html", "sort=node_wait_seconds_b:desc", tmp_path)
    assert re.search(r'<table id="workloads"[^>]*data-sorted-by="node_wait_seconds_b:desc"', dom)
    import csv

    rows = list(csv.DictReader((comparison / "compare.csv").open()))[:-1]
    expect = [r["workload"] for r in sorted(rows, key=lambda r: -float(r["node_wait_seconds_b"]))]
    body = dom.split('<table id="workloads"', 1)[1].split("</table>", 1)[0]
    shown = [html.unescape(m) for m in re.findall(r'<td data-key="workload"[^>]*>([^<]*)</td>', body)]
    assert shown == expect
    assert 'data-images-shown="1/1"' in dom
