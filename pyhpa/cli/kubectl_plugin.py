"""``kubectl-pyhpa``: the kubectl plugin (``kubectl pyhpa explain|thresholds|schedules|adopt|release NAMESPACE/NAME``).

kubectl runs any ``kubectl-<name>`` executable on the PATH as ``kubectl <name>``, passing the arguments
through; installing pyhpa installs this one (a console script in pyproject.toml). Each command reads the
live autoscaler (``NAME`` with ``-n NAMESPACE`` or the context's namespace, or ``NAMESPACE/NAME``) from the current
kubeconfig context (``--context``, ``--kubeconfig`` as kubectl's) exactly as
``pyhpa snapshot`` does (``pyhpa.cli.snapshot_cmd.live_snapshot``: the controller's own code path for the
object, its target's scale, its pods and its metrics), then prints what ``pyhpa explain``, ``pyhpa
thresholds`` and ``pyhpa schedules`` print for that snapshot. Nothing is written to the cluster, but by ``adopt`` and
``release``: ``pyhpa adopt`` and ``pyhpa release`` (``pyhpa.cli.adopt_cmd``) with kubectl's ``NAME -n NAMESPACE``.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Optional

import typer

from ..adapters.autoscaler import KIND, find_autoscaler, read_autoscaler
from ..adapters.errors import InputError
from ..adapters.objects import object_label
from ..adapters.parse import timestamp
from ..adapters.promql import OFFLINE_SERVER
from ..adapters.snapshot import snapshot_from_dict
from . import adopt_cmd, run_cmd
from .errors import input_errors
from .explain_cmd import explain_snapshots
from .help import Command, examples, typer_app
from .options import Output
from .schedules_cmd import report_schedules, schedule_span
from .snapshot_cmd import Kind, live_snapshot
from .thresholds_cmd import report_thresholds

plugin = typer_app(
    name="kubectl pyhpa",  # its errors say "(see kubectl pyhpa CMD -h)" however it is started
    help="pyhpa as a kubectl plugin: explain, thresholds and schedules of a live autoscaler, and adopt or release "
         "one (kubectl pyhpa explain NAME -n NAMESPACE, or NAMESPACE/NAME).",
    epilog=examples("kubectl pyhpa explain web -n shop", "kubectl pyhpa thresholds shop/web",
                    "kubectl pyhpa schedules web -n shop", "kubectl pyhpa adopt web -n shop"),
)

KEY = typer.Argument(..., metavar="[NAMESPACE/]NAME", help="The autoscaler: NAME in -n NAMESPACE (default: the "
                                                              "context's namespace), or NAMESPACE/NAME.")
NAMESPACE_OPTION = typer.Option(None, "--namespace", "-n", help="The autoscaler's namespace, as kubectl's -n (default: "
                                                                "the kubeconfig context's namespace, else default).")
KIND_OPTION = typer.Option(Kind.horizontalautoscaler, "--kind",
                           help="horizontalautoscaler (pyhpa.dev) or hpa (a native autoscaling/v2 HPA).")
OUTPUT_OPTION = typer.Option(Output.text, "--output", "-o", help="text for people, or json.")


def _live(key: str, namespace: str | None, kubeconfig: str | None, context: str | None, server: str | None,
          kind: Kind, now: str | None = None):
    """The live snapshot of ``key`` (``NAME`` in ``namespace``, or ``NAMESPACE/NAME``), parsed
    (``pyhpa.adapters.snapshot.Snapshot``)."""
    clock = timestamp(now, "--now") if now else None
    key = full_key(key, namespace, kubeconfig, context, server)
    doc = live_snapshot(key, kubeconfig, context, server, kind.value, clock)
    return doc, snapshot_from_dict(doc, source=f"kubectl pyhpa {key}")


def full_key(key: str, namespace: str | None, kubeconfig: str | None, context: str | None, server: str | None) -> str:
    """``NAMESPACE/NAME`` of the autoscaler, as kubectl finds it: ``-n``, else the kubeconfig context's namespace
    (``default`` when it names none) for a bare ``NAME``. InputError when ``-n`` and ``NAMESPACE/NAME`` disagree."""
    if "/" in key:
        if namespace is not None and key.partition("/")[0] != namespace:
            raise InputError(f"-n {namespace} but the autoscaler is {key!r}: give one namespace", field="--namespace")
        return key
    if namespace is None:
        from ..adapters.kubeconfig import load_config

        namespace = load_config(kubeconfig, server, context).namespace or "default"
    return f"{namespace}/{key}"


def explain(
    key: str = KEY,
    namespace: Optional[str] = NAMESPACE_OPTION,
    kubeconfig: Optional[str] = run_cmd.KUBECONFIG_OPTION,
    context: Optional[str] = run_cmd.CONTEXT_OPTION,
    server: Optional[str] = run_cmd.SERVER_OPTION,
    kind: Kind = KIND_OPTION,
    output: Output = OUTPUT_OPTION,
    now: Optional[str] = typer.Option(None, "--now", help="The sync's clock, RFC 3339 (default: the wall clock)."),
) -> None:
    """Explain what the live autoscaler decides now, per metric, per source and per normalization step."""
    _, snap = _live(key, namespace, kubeconfig, context, server, kind, now)
    explain_snapshots([snap], output)


def thresholds(
    key: str = KEY,
    namespace: Optional[str] = NAMESPACE_OPTION,
    kubeconfig: Optional[str] = run_cmd.KUBECONFIG_OPTION,
    context: Optional[str] = run_cmd.CONTEXT_OPTION,
    server: Optional[str] = run_cmd.SERVER_OPTION,
    kind: Kind = KIND_OPTION,
    output: Output = OUTPUT_OPTION,
) -> None:
    """For each metric of the live autoscaler and replica count: the value above which it scales up and at or below which it scales down; with warnings where its pods' requests and limits starve a target."""
    _, snap = _live(key, namespace, kubeconfig, context, server, kind)
    report_thresholds(snap.inputs.hpa, snap.inputs.config, snap.inputs.pods, output, [snap.inputs.scale.spec_replicas])


def schedules(
    key: str = KEY,
    namespace: Optional[str] = NAMESPACE_OPTION,
    kubeconfig: Optional[str] = run_cmd.KUBECONFIG_OPTION,
    context: Optional[str] = run_cmd.CONTEXT_OPTION,
    server: Optional[str] = run_cmd.SERVER_OPTION,
    since: Optional[str] = typer.Option(None, "--from", help="From this time, RFC 3339 (without offset: UTC). Default: now."),
    until: Optional[str] = typer.Option(None, "--to", help="Up to this time, RFC 3339 (without offset: UTC). Default: 7 days after --from."),
    limit: int = typer.Option(100, "--limit", help="At most this many occurrences per window."),
    output: Output = OUTPUT_OPTION,
) -> None:
    """List the live autoscaler's window starts and ends between --from and --to, and its expired dated windows."""
    start, end = schedule_span(since, until, limit)
    doc, _ = _live(key, namespace, kubeconfig, context, server, Kind.horizontalautoscaler)
    found = find_autoscaler(doc["hpa"])
    parsed = read_autoscaler(found, prometheus_server=OFFLINE_SERVER, extensions=True)
    # the snapshot keeps a HorizontalAutoscaler without extension fields as an autoscaling/v2 HPA; the live one is not
    live = object_label({"kind": KIND, "metadata": found.get("metadata")})
    report_schedules(replace(parsed, kind=KIND, label=live), start, end, limit, output)


adopt = adopt_cmd.command("adopt", adopt_cmd.ADOPT_HELP, typer.Argument(
    None, metavar="[NAMESPACE/]NAME", help="The native HPA (or --all)."), NAMESPACE_OPTION, full_key)
release = adopt_cmd.command("release", adopt_cmd.RELEASE_HELP, typer.Argument(
    None, metavar="[NAMESPACE/]NAME", help="The HorizontalAutoscaler (or --all)."), NAMESPACE_OPTION, full_key)


EXAMPLES = {
    "explain": examples("kubectl pyhpa explain web -n shop      # what it decides now, and why",
                        "kubectl pyhpa explain shop/web -o json",
                        "kubectl pyhpa explain web --kind hpa   # a native autoscaling/v2 HPA"),
    "thresholds": examples("kubectl pyhpa thresholds web -n shop   # the values it scales at",
                           "kubectl pyhpa thresholds shop/web -o json"),
    "schedules": examples("kubectl pyhpa schedules web -n shop    # its windows in the next 7 days",
                          "kubectl pyhpa schedules shop/web --from 2026-12-24T00:00:00Z"),
    "adopt": examples("kubectl pyhpa adopt web -n shop --dry-run   # the HorizontalAutoscaler it would create",
                      "kubectl pyhpa adopt web -n shop             # hand the HPA over to pyhpa"),
    "release": examples("kubectl pyhpa release web -n shop           # and back to a native HPA"),
}
for _name, _fn in (("explain", explain), ("thresholds", thresholds), ("schedules", schedules), ("adopt", adopt),
                   ("release", release)):
    plugin.command(_name, cls=Command, epilog=EXAMPLES[_name])(input_errors(_fn))


def main() -> None:  # pragma: no cover - console entry point
    plugin(prog_name="kubectl pyhpa")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
