"""``pyhpa fleet tune``: settings for every workload of a fleet, then the bill of all of them together.

The fleet's span is split: its last ``check_seconds`` (a week by default) are the check, the rest the history.
Each workload is tuned on the history as ``pyhpa tune`` tunes one (``pyhpa.tune.prepare`` and ``tune``: the same
search, the same held-out day inside the history, the same objective), one workload a task: on a Dask cluster
(``scheduler``: its address; by default a local one of ``processes`` worker processes, Dask's ``LocalCluster``),
or one after another in this process (``serial``). A task is deterministic (the search is seeded, runs in its own
process without a pool, and its budget is trials, not time), so where it runs changes nothing. Then the fleet runs
twice over the check — its autoscalers as they are, and with every recommendation — on the node pools, and the two
are compared (``pyhpa.fleet.whatif.compare``): the bill of the whole recommendation on the week after the history.

Written into the output folder: ``recommended/NAME.yaml`` (each workload's recommended.yaml, with tune's comments),
``fleet-recommended.yaml`` (the fleet with them; the check runs it from memory, ``recommended``), ``current/`` and ``recommended/run/`` (each check's outputs),
``compare.csv``, ``compare.png`` and ``tune.json`` (per workload: current and recommended in-sample figures).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import yaml

from ..adapters.errors import InputError
from ..adapters.parse import format_time
from ..adapters.snapshot import read_document
from ..simulate import Settings, WorkloadFiles
from .spec import Fleet, under, with_absolute_paths
from .tasks import run_tasks

#: the search's time budget per workload: large, so trials (not a machine's speed) end it
TUNE_TIMEOUT_SECONDS = 24 * 3600.0
#: the most trials a workload's search runs (``--trials``)
MAX_TRIALS = 10_000
#: the most Dask worker processes started locally (``--processes``)
MAX_PROCESSES = 256


@dataclass(slots=True, frozen=True)
class WorkloadJob:
    """One workload's tuning task (picklable: it travels to a Dask worker): its files (absolute paths), trace settings, the window
    in its trace's own time (ISO 8601), the search's budget and seed, the objective and the settings."""

    name: str
    files: WorkloadFiles
    where: tuple[str, ...]
    load_scale: float
    start: str
    end: str
    trials: int
    seed: int
    objective: tuple[str, float]
    settings: Settings
    min_replicas_floor: int = 1


def tune_workload(job: WorkloadJob) -> dict:
    """Tune one workload (``pyhpa tune``'s search on its history): ``name``, ``manifest`` (the recommended
    autoscaler), ``yaml`` (recommended.yaml's text) and ``current``/``recommended`` (in-sample figures)."""
    from ..tune import Objective, prepare
    from ..tune import tune as run_tune
    from ..tune.report import evaluation_dict, inputs_of, recommended_yaml

    p = prepare(job.files, where=job.where, start=job.start, end=job.end, load_scale=job.load_scale, gaps="hold",
                settings=job.settings, min_replicas_floor=job.min_replicas_floor)
    result = run_tune(p, Objective(*job.objective), trials=job.trials, timeout=TUNE_TIMEOUT_SECONDS, jobs=1,
                      seed=job.seed, clock=time.process_time)
    inputs = inputs_of(job.files, p)
    return {"name": job.name, "manifest": result.manifest, "yaml": recommended_yaml(result, p, inputs),
            "current": evaluation_dict(result.current, p), "recommended": evaluation_dict(result.recommended, p)}


def jobs_of(fleet: Fleet, history_end: float, trials: int, seed: int, objective: tuple[str, float],
            settings: Settings, min_replicas_floor: int = 1) -> list[WorkloadJob]:
    """A tuning task per workload over ``[fleet.start, history_end)`` (fleet time), in its trace's own time;
    ``min_replicas_floor`` (``fleet tune --min-replicas-floor``) for every workload. Raises InputError naming the
    flag and the workload when the floor is above a workload's maxReplicas (before any task starts)."""
    out = []
    for i, w in enumerate(fleet.workloads):
        if not 1 <= min_replicas_floor <= w.autoscaler.hpa.max_replicas:
            raise InputError(f"must be from 1 to each workload's maxReplicas: workload {w.spec.name} has "
                             f"{w.autoscaler.hpa.max_replicas} ({w.autoscaler.file}), got {min_replicas_floor}",
                             field="--min-replicas-floor")
        shift = w.spec.trace.shift
        folder = Path(fleet.file).resolve().parent
        files = WorkloadFiles((w.autoscaler.file,), str(under(folder, w.spec.target)), str(under(folder, w.spec.trace.file)),
                              w.spec.trace.column, str(under(folder, w.spec.profile)) if w.spec.profile else None)
        out.append(WorkloadJob(w.spec.name, files, tuple(w.spec.trace.where), w.spec.trace.scale,
                               format_time(fleet.start - shift), format_time(history_end - shift), trials, seed + i,
                               objective, settings, min_replicas_floor))
    return out


def run_jobs(jobs: list[WorkloadJob], *, scheduler: str | None, processes: int, serial: bool,
             progress: Callable[[int, int], None] | None = None) -> list[dict]:
    """Every job's result, in the jobs' order: in this process (``serial``), or on the Dask cluster at
    ``scheduler`` (``tcp://host:port``), else on a local Dask cluster of ``processes`` worker processes
    (``pyhpa.fleet.tasks.run_tasks``). Raises InputError: an unreachable scheduler, a task that failed (its one
    line)."""
    return run_tasks(tune_workload, jobs, scheduler=scheduler, processes=processes, serial=serial, progress=progress,
                     what="a workload's tuning")


@dataclass(frozen=True)
class Recommended:
    """The fleet with every workload's recommendation, in memory (``recommended``): ``file`` (where
    ``write_recommended`` writes the fleet file, fleet-recommended.yaml: its errors and its summary name it),
    ``doc`` (the fleet document, every file it names absolute), ``autoscalers`` (each recommended manifest by the file
    it is written to, recommended/NAME.yaml, which ``doc`` names) and ``texts`` (each file's text as written: the
    manifests with tune's comments)."""

    file: Path
    doc: dict
    autoscalers: dict[str, dict]
    texts: dict[Path, str]


def recommended(fleet: Fleet, results: list[dict], out: Path) -> Recommended:
    """The fleet ``fleet`` with each workload's recommended autoscaler (``results``: ``tune_workload``'s, by
    workload name), to be written into ``out``; nothing is written."""
    folder = out / "recommended"
    doc = with_absolute_paths(read_document(fleet.file), Path(fleet.file).resolve().parent)
    by_name = {r["name"]: r for r in results}
    autoscalers, texts = {}, {}
    for w in doc["spec"]["workloads"]:
        path = folder / f"{w['name']}.yaml"
        w["autoscaler"] = str(path.resolve())
        autoscalers[w["autoscaler"]] = by_name[w["name"]]["manifest"]
        texts[path] = by_name[w["name"]]["yaml"]
    path = out / "fleet-recommended.yaml"
    texts[path] = (f"# {Path(fleet.file).name} with the autoscalers pyhpa fleet tune recommends\n"
                   + yaml.safe_dump(doc, sort_keys=False))
    return Recommended(path, doc, autoscalers, texts)


def write_recommended(r: Recommended) -> Path:
    """recommended/NAME.yaml for each workload and fleet-recommended.yaml (the fleet file with them, every path
    absolute: it runs again as it is, ``pyhpa fleet simulate``); returns the fleet file's path."""
    for path, text in r.texts.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return r.file


def write_tune_json(results: list[dict], out: Path, meta: dict) -> Path:
    path = out / "tune.json"
    path.write_text(json.dumps({**meta, "workloads": [{k: r[k] for k in ("name", "current", "recommended",
                                                                          "manifest")} for r in results]},
                               indent=2) + "\n")
    return path


def check_span(fleet: Fleet, check_seconds: float) -> float:
    """Where the history ends and the check begins (epoch s); InputError when the fleet's span leaves less than
    two days of history before a check of ``check_seconds``."""
    if not check_seconds > 0:
        raise InputError(f"must be more than 0 seconds (the span the recommendations are checked on), got "
                         f"{check_seconds:g}", field="--check")
    history_end = fleet.end - check_seconds
    if history_end - fleet.start < 2 * 86400:
        raise InputError(f"the fleet's span ({format_time(fleet.start)} to {format_time(fleet.end)}) leaves "
                         f"{max(history_end - fleet.start, 0) / 86400:.1f} days of history before a check of "
                         f"{check_seconds / 86400:g} days; tune needs two (a shorter --check, or longer traces)",
                         field="--check")
    return history_end

