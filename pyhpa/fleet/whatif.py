"""What-if: a second fleet made from a first by overlays (``pyhpa fleet simulate A.yaml --what-if KEY=VALUE``), and
two fleets' results compared workload by workload.

Overlays (``KEY=VALUE``; several apply in order):

- ``nodeAutoscaler=karpenter`` or ``cluster-autoscaler``: the other node autoscaler (its settings as the file has
  them, else their defaults);
- ``scoringStrategy=MostAllocated`` or ``LeastAllocated``;
- ``prediction=on``, ``saturation=on``: every autoscaler becomes a HorizontalAutoscaler with that section at its
  defaults (``spec.prediction: {}``; docs/prediction.md, docs/saturation.md);
- ``targets=+10%`` (or ``-5%``, ...): every metric target moved by that percent (``averageUtilization`` rounded to a
  whole percent, ``averageValue``/``value`` to a thousandth);
- ``nodePools=FILE``: the node pools of a YAML file (a list, as ``spec.nodePools``) instead of the fleet's.

The new fleet is made and loaded in memory (``what_if``, ``load_what_if``: checked before anything runs, its
errors naming the fleet file and the overlays, or the ``nodePools`` file and its pool); its fleet file and the
autoscalers it changed are also written into a folder of the run's outputs (``write_what_if``, every file it names
made absolute), so it can be run again as it is.
"""

from __future__ import annotations

import copy
import csv
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import yaml

from ..adapters.autoscaler import find_autoscaler
from ..adapters.errors import InputError
from ..adapters.parse import quantity
from ..adapters.snapshot import read_document
from ..simulate import Settings
from .gaps import TraceGaps
from .spec import Fleet, load_fleet, read_node_pools, with_absolute_paths

KEYS = ("nodeAutoscaler", "scoringStrategy", "prediction", "saturation", "targets", "nodePools")
FLAG = "--what-if"
#: the most overlays one run takes
MAX_OVERLAYS = 20
_PERCENT = re.compile(r"^([+-])(\d{1,3}(?:\.\d+)?)%$")


def parse_overlays(items: list[str]) -> list[tuple[str, str]]:
    """``KEY=VALUE`` items checked (InputError naming ``--what-if`` for an unknown key or value)."""
    if len(items) > MAX_OVERLAYS:
        raise InputError(f"{len(items)} given; at most {MAX_OVERLAYS}", field=FLAG)
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key not in KEYS:
            raise InputError(f"want KEY=VALUE with KEY one of {', '.join(KEYS)}, got {item!r}", field=FLAG)
        ok = {"nodeAutoscaler": value in ("karpenter", "cluster-autoscaler"),
              "scoringStrategy": value in ("LeastAllocated", "MostAllocated"),
              "prediction": value == "on", "saturation": value == "on",
              "targets": bool(_PERCENT.match(value)) and float(value[1:-1]) < 100, "nodePools": bool(value)}[key]
        if not ok:
            want = {"nodeAutoscaler": "karpenter or cluster-autoscaler", "scoringStrategy":
                    "LeastAllocated or MostAllocated", "prediction": "on", "saturation": "on",
                    "targets": "a signed percent below 100, e.g. +10%", "nodePools": "a YAML file"}[key]
            raise InputError(f"{key} takes {want}, got {value!r}", field=FLAG)
        out.append((key, value))
    return out


def _scaled_targets(doc: dict, percent: float) -> None:
    factor = Decimal(1) + Decimal(str(percent)) / 100
    for m in (doc.get("spec") or {}).get("metrics") or []:
        for section in m.values():
            target = section.get("target") if isinstance(section, dict) else None
            if not isinstance(target, dict):
                continue
            if "averageUtilization" in target:
                target["averageUtilization"] = max(1, int(round(target["averageUtilization"] * float(factor))))
            for key in ("averageValue", "value"):
                if key in target:
                    scaled = (quantity(target[key], key) * factor).quantize(Decimal("0.001"))
                    target[key] = f"{int(scaled * 1000)}m"


@dataclass(frozen=True)
class WhatIf:
    """A fleet changed by overlays, in memory: ``source`` (the fleet file it was made from), ``overlays``, ``doc``
    (the new fleet document, every file it names absolute), ``autoscalers`` (the autoscaler documents it changed,
    each by the file of ``folder`` it is written to, which ``doc`` names), ``folder`` (where ``write_what_if``
    writes it) and ``name`` (how its errors name it: the file and the overlays)."""

    source: Path
    overlays: tuple[tuple[str, str], ...]
    doc: dict
    autoscalers: dict[str, dict]
    folder: Path

    @property
    def name(self) -> str:
        return f"{self.source} with {FLAG} " + ", ".join(f"{k}={v}" for k, v in self.overlays)


def what_if(fleet_file: str | Path, overlays: list[tuple[str, str]], folder: Path) -> WhatIf:
    """The fleet ``fleet_file`` with ``overlays`` applied (``parse_overlays``), in memory, to be written into
    ``folder``. Raises InputError for a file that cannot be read, and for a ``nodePools=FILE`` whose list is not
    node pools (naming FILE, the pool and its field)."""
    src = Path(fleet_file)
    doc = read_document(src)
    if not isinstance(doc, dict) or not isinstance(doc.get("spec"), dict):
        raise InputError("is not a fleet file (kind: Fleet with a spec)", file=str(src))
    doc = with_absolute_paths(doc, src.resolve().parent)
    spec = doc["spec"]
    changed: dict[str, dict] = {}
    for key, value in overlays:
        if key == "nodeAutoscaler":
            spec.setdefault("nodeAutoscaler", {})["model"] = value
        elif key == "scoringStrategy":
            spec.setdefault("scheduler", {})["scoringStrategy"] = value
        elif key == "nodePools":
            pools = read_document(value)
            read_node_pools(pools, value)  # checked here: its errors name the file given, not the fleet
            spec["nodePools"] = pools
        else:  # each autoscaler file once, however many workloads share it
            for path in dict.fromkeys(w["autoscaler"] for w in spec.get("workloads") or [] if w.get("autoscaler")):
                hpa = changed.get(path)
                if hpa is None:
                    hpa = changed[path] = copy.deepcopy(find_autoscaler(read_document(path), path))
                if key in ("prediction", "saturation"):
                    hpa["apiVersion"], hpa["kind"] = "pyhpa.dev/v1alpha1", "HorizontalAutoscaler"
                    hpa["spec"].setdefault(key, {})
                else:
                    _scaled_targets(hpa, float(value[:-1]))
    names = {path: str((folder / f"autoscaler-{i:03d}-{Path(path).name}").resolve())
             for i, path in enumerate(changed)}
    for wl in spec.get("workloads") or []:
        if wl.get("autoscaler") in names:
            wl["autoscaler"] = names[wl["autoscaler"]]
    return WhatIf(src, tuple(overlays), doc, {names[path]: hpa for path, hpa in changed.items()}, folder)


def load_what_if(w: WhatIf, settings: Settings, start: str | None, end: str | None,
                 gaps: TraceGaps | None = None) -> Fleet:
    """The what-if's fleet loaded from memory as ``load_fleet`` loads a file (its errors naming ``w.name``; ``gaps``
    as ``load_fleet``'s)."""
    return load_fleet(w.name, settings, start, end, raw=copy.deepcopy(w.doc), autoscalers=w.autoscalers, gaps=gaps)


def write_what_if(w: WhatIf) -> Path:
    """Write the what-if into its ``folder`` (its fleet file, and the autoscalers it changed, every file it names
    absolute), so that it runs again on its own; returns the fleet file's path."""
    w.folder.mkdir(parents=True, exist_ok=True)
    for path, hpa in w.autoscalers.items():
        Path(path).write_text(yaml.safe_dump(hpa, sort_keys=False))
    path = w.folder / "fleet.yaml"
    note = f"# {w.source.name} with " + ", ".join(f"{k}={v}" for k, v in w.overlays) + \
        " (pyhpa fleet simulate --what-if)\n"
    path.write_text(note + yaml.safe_dump(w.doc, sort_keys=False))
    return path


COMPARE_COLUMNS = ("workload", "cost_a", "cost_b", "cost_change", "unserved_requests_a", "unserved_requests_b",
                   "unserved_change", "overloaded_seconds_a", "overloaded_seconds_b", "node_wait_seconds_a",
                   "node_wait_seconds_b", "pod_hours_a", "pod_hours_b")


def compare(a: dict, b: dict) -> dict:
    """Two fleets' summaries side by side: ``total`` (cost, unserved requests, overloaded and node-wait seconds,
    node-hours of A and B and the change) and ``workloads`` (rows of ``COMPARE_COLUMNS`` for the workloads both
    have, by name). Cost per workload is its ``cost_share``."""
    bw = {w["label"]: w for w in b["workloads"]}
    rows = []
    for w in a["workloads"]:
        o = bw.get(w["label"])
        if o is None:
            continue
        ca, cb = w["fleet"]["cost_share"], o["fleet"]["cost_share"]
        rows.append({"workload": w["label"], "cost_a": ca, "cost_b": cb, "cost_change": round(cb - ca, 4),
                     "unserved_requests_a": w["unserved_requests"], "unserved_requests_b": o["unserved_requests"],
                     "unserved_change": round(o["unserved_requests"] - w["unserved_requests"], 1),
                     "overloaded_seconds_a": w["overloaded_seconds"], "overloaded_seconds_b": o["overloaded_seconds"],
                     "node_wait_seconds_a": w["fleet"]["node_wait_seconds"],
                     "node_wait_seconds_b": o["fleet"]["node_wait_seconds"],
                     "pod_hours_a": w["pod_hours"], "pod_hours_b": o["pod_hours"]})
    fa, fb = a["fleet"], b["fleet"]
    total = {k: {"a": fa[k], "b": fb[k], "change": round(fb[k] - fa[k], 4)}
             for k in ("cost", "node_hours", "unserved_requests", "unserved_fraction", "overloaded_seconds",
                       "pending_pod_seconds", "node_wait_seconds")}
    return {"total": total, "workloads": rows}


def write_compare(result: dict, folder: Path, labels: tuple[str, str],
                  report: tuple[tuple[str, str], str] | None = None) -> list[Path]:
    """compare.csv (a row per workload, then ``total``) and compare.png (each workload's change in cost and in
    unserved requests, and the totals) in ``folder``; with ``report`` (what each side is, and the page's title),
    report.html of the two too (``pyhpa.fleet.plots.write_compare_report``)."""
    path = folder / "compare.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COMPARE_COLUMNS)
        for r in result["workloads"]:
            w.writerow([r[c] for c in COMPARE_COLUMNS])
        t = result["total"]
        w.writerow(["total", t["cost"]["a"], t["cost"]["b"], t["cost"]["change"], t["unserved_requests"]["a"],
                    t["unserved_requests"]["b"], t["unserved_requests"]["change"], t["overloaded_seconds"]["a"],
                    t["overloaded_seconds"]["b"], t["node_wait_seconds"]["a"], t["node_wait_seconds"]["b"], "", ""])
    written = [path, _plot_compare(result, folder / "compare.png", labels)]
    if report is not None:
        from .plots import write_compare_report

        written.append(write_compare_report(result, folder, labels, *report))
    return written


def _plot_compare(result: dict, path: Path, labels: tuple[str, str]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted(result["workloads"], key=lambda r: (r["cost_change"], r["workload"]))
    shown = rows[:10] + rows[-10:] if len(rows) > 20 else rows
    names = [r["workload"] for r in shown]
    fig, (cost, unserved) = plt.subplots(1, 2, figsize=(10.0, 1.4 + 0.3 * max(len(shown), 1)), dpi=100, sharey=True)
    cost.barh(names, [r["cost_change"] for r in shown], color=["tab:green" if r["cost_change"] <= 0 else "tab:red"
                                                               for r in shown])
    cost.axvline(0, color="black", linewidth=0.8)
    cost.set_xlabel(f"cost change, $ ({labels[1]} - {labels[0]})")
    unserved.barh(names, [r["unserved_change"] for r in shown],
                  color=["tab:green" if r["unserved_change"] <= 0 else "tab:red" for r in shown])
    unserved.axvline(0, color="black", linewidth=0.8)
    unserved.set_xlabel("unserved requests change")
    for ax, key, what in ((cost, "cost_change", "cost"), (unserved, "unserved_change", "unserved requests")):
        if not any(r[key] for r in shown):  # say so, rather than an empty plot
            ax.text(0.5, 0.5, f"no workload's {what} changed", transform=ax.transAxes, ha="center", va="center",
                    color="#666", bbox={"facecolor": "white", "edgecolor": "none"})
    t = result["total"]
    cost.set_title(f"total: cost {t['cost']['a']:,.2f} -> {t['cost']['b']:,.2f} $, unserved "
                   f"{t['unserved_requests']['a']:,.0f} -> {t['unserved_requests']['b']:,.0f}", loc="left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
