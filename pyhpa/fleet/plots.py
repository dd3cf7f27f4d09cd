"""The fleet's plots and its self-contained HTML report (``pyhpa fleet simulate`` writes them beside summary.json).

- ``nodes.png``: each node pool's nodes (Ready, and launching) and what they cost per hour, over the simulated span;
- ``pending.png``: Pending pods (all, and those no node fits) over time;
- ``cpu.png``: each pool's Ready CPU (what its Ready nodes allocate, in cores: the capacity, whatever mix of instance
  types makes it up) and what the pods bound to them request (DaemonSet overhead included), over time;
- ``overload.png``: per pool, how many of its workloads are overloaded (their demand above what their serving pods
  can serve: the mean over each minute) and the requests they left unserved in each minute, over time;
- ``worst.png``: the workloads that dropped the largest share of their requests, with their time waiting for nodes;
- ``report.html``: one file with no network access (styles, script and the plots inside it): the fleet's and pools'
  figures, the plots, and the workload table, sorted by clicking a column's header (or by ``#sort=COLUMN:desc`` in
  the address).
"""

from __future__ import annotations

import base64
import html
import json
import math
from datetime import datetime, timezone
from pathlib import Path

from ..simulate.timeline import minute_spans

#: how many workloads worst.png shows
WORST = 15
#: the workload table's columns in report.html: (key, header, how the value is shown)
TABLE = (
    ("workload", "workload", "{}"),
    ("pool", "pool", "{}"),
    ("pod_hours", "pod-hours", "{:,.1f}"),
    ("unserved_requests", "unserved requests", "{:,.0f}"),
    ("unserved_percent", "unserved %", "{:.3f}"),
    ("overloaded_seconds", "overloaded s", "{:,.0f}"),
    ("pending_pod_seconds", "Pending pod-s", "{:,.0f}"),
    ("node_wait_seconds", "node wait pod-s", "{:,.0f}"),
    ("evicted_pods", "evicted pods", "{:,}"),
    ("cost_share", "cost share $", "{:,.2f}"),
)


#: legends right of the plot, where no line or band of any pool can be under them
OUTSIDE = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0.0, "fontsize": 8}


def _figure(width: float = 10.0, height: float = 4.0):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height), dpi=100)


def _times(samples, pool: str):
    rows = [r for r in samples if r.pool == pool]
    return [datetime.fromtimestamp(r.time, tz=timezone.utc) for r in rows], rows


def plot_nodes(run, path: Path) -> Path:
    """nodes.png: per pool, Ready nodes and those still launching (top), and the bill so far in dollars (bottom)."""
    import matplotlib.pyplot as plt

    fig, (ax, cost_ax) = plt.subplots(2, 1, figsize=(10.0, 5.6), dpi=100, sharex=True,
                                      gridspec_kw={"height_ratios": [3, 2]})
    for pool in run.pools.values():
        name = pool.spec.name
        times, rows = _times(run.samples, name)
        ready = [r.nodes for r in rows]
        line = ax.step(times, ready, where="post", label=f"{name}: Ready")[0]
        ax.fill_between(times, ready, [r.nodes + r.nodes_launching for r in rows], step="post",
                        color=line.get_color(), alpha=0.3, label=f"{name}: launching")
        spent, total = [], 0.0
        for k, r in enumerate(rows):  # each minute at the cost per hour it began with
            spent.append(total)
            if k + 1 < len(rows):
                total += r.cost_per_hour * (rows[k + 1].time - r.time) / 3600.0
        cost_ax.plot(times, spent, color=line.get_color(), label=f"{name}")
    ax.set_ylabel("nodes")
    ax.set_ylim(bottom=0)
    ax.legend(**OUTSIDE)
    ax.set_title(f"Nodes and their bill ({run.fleet.spec.node_autoscaler.model.value})")
    cost_ax.set_ylabel("dollars so far")
    cost_ax.set_ylim(bottom=0)
    cost_ax.legend(**OUTSIDE)
    _utc_axis(cost_ax)
    fig.tight_layout()
    fig.savefig(path)
    _close(fig)
    return path


def plot_pending(run, path: Path) -> Path:
    """pending.png: Pending pods per pool, and those that no node fits (waiting for a node)."""
    fig, ax = _figure(10.0, 3.2)
    for pool in run.pools.values():
        times, rows = _times(run.samples, pool.spec.name)
        pending = ax.fill_between(times, 0, [r.pending_pods for r in rows], step="post", alpha=0.35,
                                  label=f"{pool.spec.name}: Pending")
        ax.step(times, [r.unschedulable_pods for r in rows], where="post", color=pending.get_facecolor()[0][:3],
                label=f"{pool.spec.name}: of them, no node fits")
    return _save_over_time(fig, ax, "pods (at each minute)", "Pending pods", path)


def plot_cpu(run, path: Path) -> Path:
    """cpu.png: per pool, the CPU its Ready nodes allocate (Ready CPU, cores) and what the pods bound to them request
    (DaemonSet overhead included: what the scheduler and the node autoscaler count), at each minute."""
    fig, ax = _figure(10.0, 3.6)
    for pool in run.pools.values():
        name = pool.spec.name
        times, rows = _times(run.samples, name)
        line = ax.step(times, [r.allocatable_cpu_millicores / 1000 for r in rows], where="post",
                       label=f"{name}: Ready CPU (allocatable)")[0]
        ax.fill_between(times, 0, [r.requested_cpu_millicores / 1000 for r in rows], step="post",
                        color=line.get_color(), alpha=0.3, label=f"{name}: requested")
    return _save_over_time(fig, ax, "cores (at each minute)", "CPU of the Ready nodes: allocatable and requested", path)


def _utc_axis(ax) -> None:
    """Dates on ``ax``'s time axis, concise, and said to be UTC (every fleet time is)."""
    import matplotlib.dates as mdates

    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax.xaxis.get_major_locator(), tz=timezone.utc))
    ax.set_xlabel("time (UTC)")


def _save_over_time(fig, ax, ylabel: str, title: str, path: Path) -> Path:
    """A plot over the span finished as the fleet's are (axis from 0, dates, the legend outside) and written."""

    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    _utc_axis(ax)
    ax.legend(**OUTSIDE)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path)
    _close(fig)
    return path


def overload_by_minute(run) -> dict[str, tuple[list[float], list[float]]]:
    """Per pool: (the mean number of its workloads overloaded in each minute of the span, the requests they left
    unserved in it). From each workload's own record (its overload episodes, ``Cluster.unserved_by_minute``), so the
    figures add up to the summary's ``overloaded_seconds`` (over 60) and ``unserved_requests``."""
    minutes = max(1, math.ceil((run.end - run.start) / 60.0))
    out = {}
    for pool in run.pools.values():
        over, unserved = [0.0] * minutes, [0.0] * minutes
        for i in pool.workloads:
            c = run.clusters[i]
            for e in c.stats.episodes:
                for k, seconds in minute_spans(run.start, e.start, e.start + e.seconds):
                    if k >= minutes:
                        break
                    over[k] += seconds / 60.0
            for k, v in c.unserved_by_minute.items():
                if 0 <= k < minutes:
                    unserved[k] += v
        out[pool.spec.name] = (over, unserved)
    return out


def plot_overload(run, path: Path) -> Path:
    """overload.png: per pool, how many of its workloads are overloaded (top: the mean over each minute) and the
    requests they left unserved in each minute (bottom), over the span (``overload_by_minute``)."""
    import matplotlib.pyplot as plt

    fig, (ax, lost_ax) = plt.subplots(2, 1, figsize=(10.0, 5.0), dpi=100, sharex=True)
    by_pool = overload_by_minute(run)
    for name, (over, unserved) in by_pool.items():
        times = [datetime.fromtimestamp(run.start + 60.0 * k, tz=timezone.utc) for k in range(len(over))]
        line = ax.step(times, over, where="post", label=name)[0]
        lost_ax.step(times, unserved, where="post", color=line.get_color(), label=name)
    for axis, what in ((ax, "no workload was overloaded"), (lost_ax, "no request went unserved")):
        if not any(any(v > 0 for v in series[k]) for series in by_pool.values() for k in ((0,) if axis is ax else (1,))):
            axis.text(0.5, 0.5, what, transform=axis.transAxes, ha="center", va="center", color="#666")
            axis.set_ylim(0, 1)
    ax.set_ylabel("workloads overloaded")
    ax.set_ylim(bottom=0)
    ax.legend(**OUTSIDE)
    ax.set_title("Overload: workloads whose demand exceeds what their serving pods serve")
    lost_ax.set_ylabel("requests unserved\n(per minute)")
    lost_ax.set_ylim(bottom=0)
    lost_ax.legend(**OUTSIDE)
    _utc_axis(lost_ax)
    fig.tight_layout()
    fig.savefig(path)
    _close(fig)
    return path


def plot_worst(summary: dict, path: Path) -> Path:
    """worst.png: the ``WORST`` workloads by unserved share of requests, and the seconds their pods waited for
    nodes."""
    worst = sorted(summary["workloads"], key=lambda w: (-w["unserved_fraction"], w["label"]))[:WORST]
    fig, (left, right) = _figure_pair(1.2 + 0.32 * max(len(worst), 1))
    names = [w["label"] for w in worst][::-1]
    shares = [100 * w["unserved_fraction"] for w in worst][::-1]
    waits = [w["fleet"]["node_wait_seconds"] for w in worst][::-1]
    if not any(shares):  # say so, rather than an empty plot
        left.text(0.5, 0.5, "no request went unserved", transform=left.transAxes, ha="center", va="center",
                  color="#666")
    left.barh(names, shares, color="tab:red")
    left.set_xlim(0, max(shares, default=0) * 1.1 or 1)
    left.set_xlabel("unserved requests, % of requested")
    right.barh(names, waits, color="tab:blue")
    right.set_xlim(0, max(waits, default=0) * 1.1 or 1)
    right.set_xlabel("pod-seconds waiting for a node")
    right.tick_params(labelleft=False)
    left.set_title(f"The {len(worst)} workloads with the largest share of requests unserved", loc="left")
    fig.tight_layout()
    fig.savefig(path)
    _close(fig)
    return path


def _figure_pair(height: float):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(1, 2, figsize=(10.0, height), dpi=100, sharey=True)


def _close(fig) -> None:
    import matplotlib.pyplot as plt

    plt.close(fig)


def workload_table(summary: dict) -> list[dict]:
    """report.html's workload rows: ``TABLE``'s keys."""
    rows = []
    for w in summary["workloads"]:
        f = w["fleet"]
        rows.append({"workload": w["label"], "pool": f["pool"], "pod_hours": w["pod_hours"],
                     "unserved_requests": w["unserved_requests"],
                     "unserved_percent": 100 * w["unserved_fraction"], "overloaded_seconds": w["overloaded_seconds"],
                     "pending_pod_seconds": f["pending_pod_seconds"], "node_wait_seconds": f["node_wait_seconds"],
                     "evicted_pods": f["evicted_pods"], "cost_share": f["cost_share"]})
    return rows


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
table { border-collapse: collapse; margin: 8px 0 20px; }
th, td { padding: 3px 10px; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child, th.text, td.text { text-align: left; }
#workloads th { cursor: pointer; user-select: none; background: #f4f4f4; }
#workloads th[aria-sort=ascending]::after { content: " \\25B2"; }
#workloads th[aria-sort=descending]::after { content: " \\25BC"; }
img { max-width: 100%; display: block; margin: 8px 0 16px; }
.note { color: #666; }
"""

_SCRIPT = """
(function () {
  const table = document.getElementById("workloads");
  const body = table.tBodies[0];
  function sortBy(key, descending) {
    const rows = Array.from(body.rows);
    const text = table.querySelector('th[data-key="' + key + '"]').classList.contains("text");
    rows.sort(function (a, b) {
      const x = a.querySelector('td[data-key="' + key + '"]').dataset.value;
      const y = b.querySelector('td[data-key="' + key + '"]').dataset.value;
      const c = text ? x.localeCompare(y) : Number(x) - Number(y);
      return descending ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    table.querySelectorAll("th").forEach(function (th) {
      th.setAttribute("aria-sort", th.dataset.key === key ? (descending ? "descending" : "ascending") : "none");
    });
    table.dataset.sortedBy = key + ":" + (descending ? "desc" : "asc");
  }
  table.querySelectorAll("th").forEach(function (th) {
    th.addEventListener("click", function () {
      sortBy(th.dataset.key, th.getAttribute("aria-sort") !== "descending");
    });
  });
  const m = /sort=([a-z_]+)(?::(asc|desc))?/.exec(location.hash);
  if (m && table.querySelector('th[data-key="' + m[1] + '"]')) { sortBy(m[1], m[2] !== "asc"); }
  window.addEventListener("load", function () {
    const images = Array.from(document.images);
    document.body.dataset.imagesShown = String(images.filter(function (i) {
      return i.complete && i.naturalWidth > 0; }).length) + "/" + images.length;
  });
})();
"""


def write_report(summary: dict, plots: dict[str, Path], path: Path, name: str = "") -> Path:
    """report.html: everything inside one file (no network): the figures, the plots (PNG data), the sortable
    workload table. Its title is the fleet's ``name`` (its file's ``metadata.name``), else the file's name."""
    f = summary["fleet"]
    esc = html.escape
    file = Path(f["file"]).name
    title = name or file
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f"<title>pyhpa fleet: {esc(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>Fleet {esc(title)}</h1>",
        f"<p class=note>{esc(file)}: {f['workloads']} workloads, {esc(f['node_autoscaler'])}, scheduler "
        f"{esc(f['scoring_strategy'])}, {esc(f['start'])} to {esc(f['end'])} "
        f"({f['simulated_seconds'] / 3600:,.1f} simulated hours), seed {f['seed']}.</p>",
        "<table id=fleet><tr><th class=text>fleet</th><th>node-hours</th><th>cost $</th><th>unserved requests</th>"
        "<th>unserved %</th><th>overloaded s</th><th>Pending pod-s</th><th>node wait pod-s</th><th>evicted pods</th></tr>",
        f"<tr><td>total</td><td>{f['node_hours']:,.1f}</td><td>{f['cost']:,.2f}</td>"
        f"<td>{f['unserved_requests']:,.0f}</td><td>{100 * f['unserved_fraction']:.3f}</td>"
        f"<td>{f['overloaded_seconds']:,.0f}</td><td>{f['pending_pod_seconds']:,.0f}</td><td>{f['node_wait_seconds']:,.0f}</td>"
        f"<td>{f['evicted_pods']:,}</td></tr></table>",
        _twin_note(f),
        "<table id=pools><tr><th class=text>node pool</th><th>node-hours</th><th>cost $</th><th>mean nodes</th>"
        "<th>max nodes</th><th>nodes launched</th><th>nodes removed</th><th>requested CPU %</th>"
        "<th>used CPU %</th></tr>",
    ]
    for p in summary["node_pools"]:
        req, used = p["requested_cpu_utilization"], p["used_cpu_utilization"]
        parts.append(
            f"<tr><td>{esc(p['name'])}</td><td>{p['node_hours']:,.1f}</td><td>{p['cost']:,.2f}</td>"
            f"<td>{p['mean_nodes']:,.2f}</td><td>{p['max_nodes_seen']}</td><td>{p['nodes_launched']}</td>"
            f"<td>{p['nodes_removed']}</td><td>{'' if req is None else f'{100 * req:.1f}'}</td>"
            f"<td>{'' if used is None else f'{100 * used:.1f}'}</td></tr>")
    parts.append("</table>")
    for name, alt in (("nodes", "nodes and cost over time"), ("cpu", "Ready and requested CPU over time"),
                      ("pending", "Pending pods over time"), ("overload", "overloaded workloads and unserved requests over time"),
                      ("worst", "the workloads that dropped the most")):
        if name in plots:
            parts.append(_img(plots[name], alt))
    parts.append("<h2>Workloads</h2><p class=note>Click a column to sort it.</p><table id=workloads><thead><tr>")
    for key, header, _ in TABLE:
        cls = " class=text" if key in ("workload", "pool") else ""
        parts.append(f'<th data-key="{key}"{cls} aria-sort=none>{esc(header)}</th>')
    parts.append("</tr></thead><tbody>")
    for row in workload_table(summary):
        parts.append("<tr>" + "".join(
            f'<td data-key="{key}" data-value="{esc(str(row[key]))}"{" class=text" if key in ("workload", "pool") else ""}>'
            f"{esc(fmt.format(row[key]))}</td>" for key, _, fmt in TABLE) + "</tr>")
    parts.append(f"</tbody></table><script>{_SCRIPT}</script>")
    parts.append(f"<script type=application/json id=summary>{_json_in_html(summary['fleet'])}</script>")
    parts.append("</body></html>")
    path.write_text("".join(parts))
    return path


def twin_sentence(f: dict) -> str | None:
    """What the instant-nodes twin says of the fleet's overload (``f``: summary.json's ``fleet``; None without a
    twin): the printed line and report.html's."""
    t = f.get("instant_nodes")
    if t is None:
        return None
    share = t["overload_from_node_pool_fraction"]
    return (f"overload from the node pool (waiting for nodes, evictions): {t['overload_from_node_pool_seconds']:,.0f} s "
            f"of {f['overloaded_seconds']:,.0f} overloaded seconds{'' if share is None else f' ({100 * share:.0f} %)'}; "
            f"with nodes always there (the instant-nodes twin) {t['overloaded_seconds']:,.0f} s and "
            f"{t['unserved_requests']:,.0f} requests unserved")


def _twin_note(f: dict) -> str:
    """A line on the overload that is the node pool's, when the run had its instant-nodes twin (``--twin``)."""
    text = twin_sentence(f)
    return "" if text is None else f"<p id=twin>{html.escape(text[0].upper() + text[1:])}.</p>"


def _json_in_html(data) -> str:
    return json.dumps(data).replace("</", "<\\/")


def write_plots_and_report(run, summary: dict, folder: Path) -> list[Path]:
    """nodes.png, cpu.png, pending.png, overload.png, worst.png and report.html in ``folder``."""
    plots = {"nodes": plot_nodes(run, folder / "nodes.png"), "cpu": plot_cpu(run, folder / "cpu.png"),
             "pending": plot_pending(run, folder / "pending.png"), "overload": plot_overload(run, folder / "overload.png"),
             "worst": plot_worst(summary, folder / "worst.png")}
    return [*plots.values(), write_report(summary, plots, folder / "report.html", run.fleet.name)]



#: the comparison's workload table in report.html (compare.csv's columns): (key, header, how the value is shown)
COMPARE_TABLE = (
    ("workload", "workload", "{}"),
    ("cost_a", "cost {a} $", "{:,.2f}"),
    ("cost_b", "cost {b} $", "{:,.2f}"),
    ("cost_change", "cost change $", "{:,.2f}"),
    ("unserved_requests_a", "unserved {a}", "{:,.0f}"),
    ("unserved_requests_b", "unserved {b}", "{:,.0f}"),
    ("unserved_change", "unserved change", "{:,.0f}"),
    ("overloaded_seconds_a", "overloaded s {a}", "{:,.0f}"),
    ("overloaded_seconds_b", "overloaded s {b}", "{:,.0f}"),
    ("node_wait_seconds_a", "node wait pod-s {a}", "{:,.0f}"),
    ("node_wait_seconds_b", "node wait pod-s {b}", "{:,.0f}"),
    ("pod_hours_a", "pod-hours {a}", "{:,.1f}"),
    ("pod_hours_b", "pod-hours {b}", "{:,.1f}"),
)
#: the totals of the comparison in report.html: (key of ``compare``'s ``total``, label, format)
COMPARE_TOTALS = (
    ("cost", "cost $", "{:,.2f}"), ("node_hours", "node-hours", "{:,.1f}"),
    ("unserved_requests", "unserved requests", "{:,.0f}"), ("unserved_fraction", "unserved %", "{:.4f}"),
    ("overloaded_seconds", "overloaded s", "{:,.0f}"), ("pending_pod_seconds", "Pending pod-s", "{:,.0f}"),
    ("node_wait_seconds", "node wait pod-s", "{:,.0f}"),
)


def write_compare_report(result: dict, folder: Path, labels: tuple[str, str], described: tuple[str, str],
                         title: str) -> Path:
    """report.html of a comparison (``fleet simulate A B``, a what-if, ``fleet tune``) in ``folder``, beside
    compare.csv and compare.png: one file with no network access: what each side is (``described``), the totals
    side by side with the change, compare.png, each side's own report.html linked (``folder/<label>/report.html``
    where it was written; fleet tune's recommended run is ``recommended/run``), and the workload table of
    compare.csv, sorted by clicking a column (or ``#sort=COLUMN:desc``). ``result``: ``pyhpa.fleet.whatif.compare``'s."""
    esc = html.escape
    a, b = labels
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f"<title>pyhpa fleet: {esc(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{esc(title)}</h1><ul id=sides>",
    ]
    for label, what in zip(labels, described):
        sub = next((s for s in (f"{label}/report.html", f"{label}/run/report.html") if (folder / s).is_file()), None)
        link = f' (<a href="{esc(sub)}">its report</a>)' if sub else ""
        parts.append(f"<li><b>{esc(label)}</b>: {esc(what)}{link}</li>")
    parts.append(f"</ul><table id=totals><tr><th class=text>fleet</th><th>{esc(a)}</th><th>{esc(b)}</th>"
                 "<th>change</th></tr>")
    for key, label, fmt in COMPARE_TOTALS:
        v = result["total"][key]
        scale = 100 if key == "unserved_fraction" else 1
        parts.append(f'<tr data-key="{key}"><td>{esc(label)}</td><td>{fmt.format(scale * v["a"])}</td>'
                     f'<td>{fmt.format(scale * v["b"])}</td><td>{_signed(fmt, scale * v["change"])}</td></tr>')
    parts.append("</table>")
    png = folder / "compare.png"
    if png.is_file():
        parts.append(_img(png, f"each workload's change in cost and in unserved requests ({b} - {a})"))
    parts.append("<h2>Workloads</h2><p class=note>Click a column to sort it.</p><table id=workloads><thead><tr>")
    for key, header, _ in COMPARE_TABLE:
        cls = " class=text" if key == "workload" else ""
        parts.append(f'<th data-key="{key}"{cls} aria-sort=none>{esc(header.format(a=a, b=b))}</th>')
    parts.append("</tr></thead><tbody>")
    for row in result["workloads"]:
        parts.append("<tr>" + "".join(
            f'<td data-key="{key}" data-value="{esc(str(row[key]))}"{" class=text" if key == "workload" else ""}>'
            f"{esc(_signed(fmt, row[key]) if key.endswith('_change') else fmt.format(row[key]))}</td>"
            for key, _, fmt in COMPARE_TABLE) + "</tr>")
    parts.append(f"</tbody></table><script>{_SCRIPT}</script>")
    parts.append(f"<script type=application/json id=compare>{_json_in_html(result)}</script>")
    parts.append("</body></html>")
    path = folder / "report.html"
    path.write_text("".join(parts))
    return path


def _signed(fmt: str, x: float) -> str:
    """A change as ``fmt`` shows it, with a + when it is above 0 as shown (0 shows as 0, not +0 or -0)."""
    text = fmt.format(x)
    if text.lstrip("-").strip("0.,") == "":
        return fmt.format(0.0)
    return ("+" if x > 0 else "") + text
