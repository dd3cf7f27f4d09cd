"""``pyhpa adopt`` and ``pyhpa release``: hand a native HPA over to pyhpa, and back, with no moment in which no
controller holds it (``pyhpa.controller.handover``; docs/adoption.md)."""

from __future__ import annotations

import asyncio
import json
from typing import Callable, Optional

import typer
import yaml

from ..adapters.errors import InputError
from ..adapters.parse import object_name
from . import run_cmd
from .errors import err_console
from .help import examples
from .options import DocumentFormat as Format

ADOPT_EXAMPLES = examples(
    "pyhpa adopt shop/web --dry-run              # the HorizontalAutoscaler it would create",
    "pyhpa adopt shop/web                        # create it, let pyhpa sync it, delete the HPA",
    "pyhpa adopt --all -n shop                   # every HPA of a namespace (--all alone: the cluster's)",
)
RELEASE_EXAMPLES = examples(
    "pyhpa release shop/web --dry-run            # the HPA it would create, and what it cannot carry",
    "pyhpa release shop/web                      # create the HPA, let upstream sync it, delete ours",
)
#: at most this many autoscalers handed over at once (``--all``)
CONCURRENCY = 16
#: bounds of ``--timeout`` (seconds)
MIN_TIMEOUT, MAX_TIMEOUT = 1.0, 3600.0


KEY_ARGUMENT = typer.Argument(None, metavar="NAMESPACE/NAME", help="The autoscaler (or --all).")
ALL_OPTION = typer.Option(False, "--all", help="Every one of the namespace (-n) or, without -n, of the cluster.")
NAMESPACE_OPTION = typer.Option(None, "--namespace", "-n", help="With --all: the namespace (default: every one).")
DRY_RUN_OPTION = typer.Option(False, "--dry-run", help="Print what it would create; change nothing.")
OUTPUT_OPTION = typer.Option(None, "--output", "-o", help="Print what it would create as yaml or json; change "
                                                          "nothing (as --dry-run).")
TIMEOUT_OPTION = typer.Option(60.0, "--timeout", metavar="SECONDS",
                              help="Seconds to wait for the controller that takes over to sync (1 to 3600).")


def _keys(key: Optional[str], everything: bool, namespace: Optional[str]) -> list[tuple[str, str]] | None:
    """The (namespace, name) given, or None with ``--all`` (listed from the cluster). InputError otherwise."""
    from ..controller.snapshot import parse_key

    if everything:
        if key is not None:
            raise InputError("give NAMESPACE/NAME or --all, not both", field="--all")
        if namespace is not None:  # checked before any request, as docs/cli.md says
            object_name(namespace, "--namespace", label=True)
        return None
    if key is None:
        raise InputError("give NAMESPACE/NAME, or --all (with -n NAMESPACE for one namespace)", field="NAMESPACE/NAME")
    if namespace is not None:
        raise InputError("-n goes with --all; give the autoscaler as NAMESPACE/NAME", field="--namespace")
    return [parse_key(key)]


def _print(docs: list[dict], fmt: Format) -> None:
    if fmt == Format.json:
        typer.echo(json.dumps(docs[0] if len(docs) == 1 else {"apiVersion": "v1", "kind": "List", "items": docs},
                              indent=2))
    else:
        typer.echo(yaml.safe_dump_all(docs, sort_keys=False), nl=False)


def run(direction: str, key: Optional[str], everything: bool, namespace: Optional[str], dry_run: bool,
        output: Optional[Format], timeout: float, kubeconfig: Optional[str], context: Optional[str],
        server: Optional[str], api_timeout: float) -> None:
    """``pyhpa adopt`` (``direction`` "adopt") or ``pyhpa release``: hand each autoscaler over, or print what would
    be created; exit code 2 when one fails (InputError for the command line)."""
    from ..adapters.kubeconfig import load_config

    if not MIN_TIMEOUT <= timeout <= MAX_TIMEOUT:  # finite: the flag's type checked it (pyhpa.cli.help)
        raise InputError(f"must be from {MIN_TIMEOUT:g} to {MAX_TIMEOUT:g} seconds, got {timeout:g}", field="--timeout")
    if not 0 < api_timeout <= MAX_TIMEOUT:
        raise InputError(f"must be greater than 0 and at most {MAX_TIMEOUT:g} seconds, got {api_timeout:g}",
                         field="--api-timeout")
    keys = _keys(key, everything, namespace)
    config = load_config(kubeconfig, server, context)
    failed = asyncio.run(_hand_over(direction, keys, namespace or "", dry_run or output is not None,
                                    output or Format.yaml, timeout, config, api_timeout))
    if failed:
        raise typer.Exit(2)


async def _hand_over(direction: str, keys: list[tuple[str, str]] | None, namespace: str, dry_run: bool,
                     fmt: Format, timeout: float, config, api_timeout: float) -> int:
    """Hand each autoscaler over (or print what would be created); one line each on stdout, each failure one line
    on stderr. Returns how many failed."""
    from .. import __version__
    from ..controller import handover
    from ..controller.kube.api import ApiFailure, RawApi, transport_for

    # the User-Agent names the command in the API server's audit log, as pyhpa run's names its replica
    api = RawApi(config, api_timeout, transport_for(config, "aiohttp", f"pyhpa/{__version__} ({direction})"))
    try:
        if keys is None:
            try:
                collection = handover.hpa_path if direction == "adopt" else handover.autoscaler_path
                listed = await handover.listed_keys(api, collection(namespace))
            except ApiFailure as err:
                raise InputError(f"cannot list the autoscalers: {handover.answer(err)}", field="--all") from None
            keys = [tuple(k.split("/", 1)) for k in listed]
        if dry_run:
            return await _dry_run(api, direction, keys, fmt)
        step = handover.adopt if direction == "adopt" else handover.release
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(ns: str, name: str):
            async with gate:
                try:
                    return await step(api, ns, name, timeout)
                except handover.HandOverError as err:
                    return err
                except ApiFailure as err:  # a read outside the steps' own (none is expected): said, not raised
                    return handover.HandOverError(f"{ns}/{name}", f"{handover.answer(err)}; run the command again")

        failed = 0
        for result in await asyncio.gather(*(one(ns, name) for ns, name in keys)):
            if isinstance(result, handover.HandOverError):
                failed += 1
                err_console.print(f"error: {direction} {result}", markup=False)
                continue
            _warn_dropped(result.key, result.dropped)
            held = "" if result.replicas is None else f" at {result.replicas} replicas"
            owner = "pyhpa" if direction == "adopt" else "upstream's HPA controller"
            typer.echo(f"{result.outcome} {result.key}: {owner} holds it{held}")
        return failed
    finally:
        await api.close()


def _warn_dropped(key: str, dropped) -> None:
    """One ``warning:`` line on stderr per field of ``key`` that the HPA of a release cannot carry."""
    for path in dropped:
        err_console.print(f"warning: {key}: {path} has no autoscaling/v2 field: not in the HPA", markup=False)


async def _dry_run(api, direction: str, keys: list[tuple[str, str]], fmt: Format) -> int:
    """Print the objects the hand-over would create (each as it is once handed over), the fields a release would
    not carry as warnings; 1 per autoscaler that cannot be read."""
    from ..adapters.adoption import adopted_autoscaler, released_hpa
    from ..controller import handover
    from ..controller.kube.api import ApiFailure

    docs, failed = [], 0
    for ns, name in keys:
        path = handover.hpa_path(ns, name) if direction == "adopt" else handover.autoscaler_path(ns, name)
        try:
            obj = await api.get_json(path)
        except ApiFailure as err:
            failed += 1
            what = "HorizontalPodAutoscaler" if direction == "adopt" else "HorizontalAutoscaler"
            err_console.print(f"error: {direction} {ns}/{name}: cannot read the {what}: the API server answered "
                              f"{err.code} ({err.message})", markup=False)
            continue
        if direction == "adopt":
            docs.append(adopted_autoscaler(obj, handing_over=False))
            continue
        doc, dropped = released_hpa(obj)
        _warn_dropped(f"{ns}/{name}", dropped)
        docs.append(doc)
    if docs:
        _print(docs, fmt)
    return failed


def command(direction: str, doc: str, key_argument=KEY_ARGUMENT, namespace_option=NAMESPACE_OPTION,
            resolve: Callable[[str, Optional[str], Optional[str], Optional[str], Optional[str]], str] | None = None):
    """The typer command ``direction`` ("adopt" or "release") with help ``doc``: ``pyhpa adopt|release``, and with
    ``key_argument``, ``namespace_option`` and ``resolve`` (``NAME`` and ``-n`` to ``NAMESPACE/NAME``, as kubectl
    finds it) the kubectl plugin's."""

    def hand_over(
        key: Optional[str] = key_argument,
        everything: bool = ALL_OPTION,
        namespace: Optional[str] = namespace_option,
        dry_run: bool = DRY_RUN_OPTION,
        output: Optional[Format] = OUTPUT_OPTION,
        timeout: float = TIMEOUT_OPTION,
        kubeconfig: Optional[str] = run_cmd.KUBECONFIG_OPTION,
        context: Optional[str] = run_cmd.CONTEXT_OPTION,
        server: Optional[str] = run_cmd.SERVER_OPTION,
        api_timeout: float = run_cmd.API_TIMEOUT_OPTION,
    ) -> None:
        if resolve is not None and not everything and key is not None:
            key, namespace = resolve(key, namespace, kubeconfig, context, server), None
        run(direction, key, everything, namespace, dry_run, output, timeout, kubeconfig, context, server, api_timeout)

    hand_over.__doc__ = doc
    hand_over.__name__ = direction
    return hand_over


ADOPT_HELP = """Hand a native HPA over to pyhpa, with no moment in which neither controller holds it.

    Creates a HorizontalAutoscaler with the HPA's spec, paused; waits until pyhpa (pyhpa run) has synced it; deletes
    the HPA; lifts the pause and waits for pyhpa's sync. A step that fails stops there, deletes nothing more, says the
    state it left and exits 2; running it again continues. Running it on an adopted autoscaler changes nothing.
    docs/adoption.md.
    """
RELEASE_HELP = """Hand a HorizontalAutoscaler back to upstream's HPA controller (the way back from pyhpa adopt).

    Pauses it, creates the native HPA (the fields autoscaling/v2 has; each one it has not is named in a warning),
    waits until upstream's controller has synced the HPA, then deletes the HorizontalAutoscaler. Refuses one whose
    metrics have no autoscaling/v2 form. docs/adoption.md.
    """
adopt = command("adopt", ADOPT_HELP)
release = command("release", RELEASE_HELP)
